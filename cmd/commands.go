package cmd

import "github.com/urfave/cli/v2"

// commands lists every command of the binary, in the order help shows them.
func commands() []*cli.Command {
	return []*cli.Command{
		initCommand(),
		backupCommand(),
		snapshotsCommand(),
		lsCommand(),
		diffCommand(),
		findEntriesCommand(),
		statsCommand(),
		dumpCommand(),
		restoreCommand(),
		drillCommand(),
		checkCommand(),
		pinCommand(),
		unpinCommand(),
		forgetCommand(),
		pruneCommand(),
		repairCommand(),
		keyCommand(),
		scheduleCommand(),
		configCommand(),
		tickCommand(),
		serveCommand(),
		jobCommand(),
		runsCommand(),
		statusCommand(),
		repositoryCommand(),
		auditCommand(),
		installCommand(),
		versionCommand(),
		generateCommand(),
		tagCommand(),
		copyCommand(),
		unlockCommand(),
		catCommand(),
		listCommand(),
	}
}
