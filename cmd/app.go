package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

// version is set at build time with -ldflags "-X .../cmd.version=...".
var version = "dev"

// Main runs the command line with args (args[0] is the program name) and
// returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfiles := startProfiles(stderr)
	defer stopProfiles()
	app := newApp(stdout, stderr)
	err := app.RunContext(ctx, commandLine(args, app.Commands))
	if err == nil {
		return ExitOK
	}
	code := exitCode(err)
	if !isSilent(err) {
		printError(app, stderr, errorMessage(err), code)
	}
	return code
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:            "nightjar",
		Usage:           "schedule and run encrypted, deduplicated backups",
		Version:         version,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		// Errors are printed once, by Main, with their exit code.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err}
		},
		// A flag given twice gives two values, and a value keeps its
		// commas: patterns and paths may hold them. Tag flags split
		// their lists themselves (tagLists), as restic does.
		DisableSliceFlagSeparator: true,
		Commands:                  commands(),
		Flags:                     logFlags(),
		Before:                    checkLogFlags,
		Metadata:                  map[string]any{secretsKey: newSecrets()},
		Action:                    unknownCommand(cli.ShowAppHelp),
	}
	setUsageErrors(app.Commands)
	return app
}

// setUsageErrors makes a bad flag in any command, and an unknown
// subcommand of a command group, a usage error (exit 2) with one line,
// instead of the library's help dump or its exit 1.
func setUsageErrors(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return usageError{err} }
		if len(c.Subcommands) > 0 && c.Action == nil {
			// help is then this action's, not the library's command,
			// which exits 1 for an unknown topic.
			c.HideHelpCommand = true
			c.Action = unknownCommand(cli.ShowSubcommandHelp)
		}
		setUsageErrors(c.Subcommands)
	}
}

// unknownCommand is the action of the program and of each command group,
// which the library runs when no command of theirs is named: no argument
// shows help, `help [COMMAND]` shows the help of the program or of one of
// its commands (as restic's `help` does), and any other argument is an
// unknown command (a usage error).
func unknownCommand(help cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		args := c.Args()
		switch {
		case !args.Present():
			return help(c)
		case args.First() == "help" && args.Len() == 1:
			return help(c)
		case args.First() == "help" && args.Len() == 2 && c.Command.Command(args.Get(1)) != nil:
			return cli.ShowCommandHelp(c, args.Get(1))
		case args.First() == "help":
			return usageError{fmt.Errorf("no help for %q: see %s --help", strings.Join(args.Tail(), " "), c.Command.HelpName)}
		}
		return usageError{fmt.Errorf("unknown command %q: see %s --help", args.First(), c.Command.HelpName)}
	}
}

// tuneGCForBackup makes the garbage collector work at 50% heap growth
// instead of 100% for commands that back up, unless GOGC is set. A
// backup's live heap is mostly reused pack buffers while hashing and
// compression make short-lived garbage: this keeps its peak RSS about
// 55 MiB lower for no measurable CPU. Restore and check are not tuned: for
// them it cost 10 to 20% more CPU (docs/PERFORMANCE.md).
func tuneGCForBackup() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}
