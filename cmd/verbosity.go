package cmd

import "github.com/urfave/cli/v2"

// verbosityFlags are --verbose and --quiet, which every command takes
// (before or after its name): a command that has nothing to add or leave
// out accepts them and does as without. Commands that give them a meaning
// of their own (backup, check and restore's --quiet; tick and serve's
// --verbose) define them with their own help text, which the program's
// then does not replace.
func verbosityFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "say more of what the command does, where it has more to say"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only warnings and errors, where the command prints more"},
	}
}

// verbosity returns whether the command line asked for less output
// (--quiet, -q) or more (--verbose, -v), given before or after the
// command. Both at once are refused before any command runs.
func verbosity(c *cli.Context) (quiet, verbose bool) {
	return c.Bool("quiet"), c.Bool("verbose")
}
