package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Main runs the command line with args (args[0] is the program name) and
// returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signalContext(stderr)
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

// secondSignalNotice is what a second signal prints before it ends the
// process.
const secondSignalNotice = "nightjar: second signal: stopped at once, without waiting for running runs (the next pass reclaims them)"

// secondSignalKey is the context key of the switch that lets a second
// signal end the process (exitOnSecondSignal).
type secondSignalKey struct{}

// signalContext returns a context that the first SIGINT or SIGTERM
// cancels, so that a command can stop cleanly (a pass records its runs as
// interrupted). A second signal ends the process at once with
// ExitInterrupted, but only in a command that asked for it
// (exitOnSecondSignal: tick and serve, whose runs the next pass reclaims,
// as after a kill); other commands (restore, backup, prune, key) keep
// their cleanup (unlocks, temporary files), and a second signal changes
// nothing for them.
func signalContext(stderr io.Writer) (context.Context, func()) {
	armed := new(atomic.Bool)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), secondSignalKey{}, armed))
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		cancel()
		for {
			select {
			case <-sigs:
				if armed.Load() {
					fmt.Fprintln(stderr, secondSignalNotice)
					os.Exit(ExitInterrupted)
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// exitOnSecondSignal lets a second signal end the process at once (see
// signalContext); a ctx not made by signalContext is left as it is.
func exitOnSecondSignal(ctx context.Context) {
	if armed, ok := ctx.Value(secondSignalKey{}).(*atomic.Bool); ok {
		armed.Store(true)
	}
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:  "nightjar",
		Usage: "schedule and run encrypted, deduplicated backups",
		Description: `nightjar help COMMAND, or nightjar COMMAND --help, shows the help of a
command. The global options may be given after the command too; given in
both places, the one after the command counts.`,
		// The version command tells it; --version is read by commandLine.
		HideVersion:     true,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		// Errors are printed once, by Main, with their exit code.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
		// A flag given twice gives two values, and a value keeps its
		// commas: patterns and paths may hold them. Tag flags split
		// their lists themselves (tagLists), as restic does.
		DisableSliceFlagSeparator: true,
		Commands:                  commands(),
		Flags:                     slices.Concat(logFlags(), globalFlags()),
		Before:                    checkLogFlags,
		Metadata:                  map[string]any{secretsKey: newSecrets()},
		Action:                    helpAction,
	}
	prepareCommands(app.Commands, "")
	app.Setup()
	return app
}

// globalFlags are the flags the program takes before its command as well
// as after it (commandLine carries them to the command): the repository
// and password flags, the config and state files, --verbose and --quiet,
// and --no-lock.
// A command that does not take one refuses it as an unknown option.
func globalFlags() []cli.Flag {
	return slices.Concat(repoFlags(), configFlags(), verbosityFlags(),
		[]cli.Flag{noLockFlag()}) // read-only commands only (readRepoFlags)
}

// prepareCommands makes every command answer the same way: a bad flag or
// value is a usage error (exit 2) in one line, a group named without a
// subcommand shows its help, an unknown subcommand is a usage error with a
// suggestion, every command takes --help, --verbose and --quiet, and a
// command whose help shows no arguments refuses them. parent is the full
// name of the commands' parent ("" for the program's own).
func prepareCommands(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		helpName := "nightjar " + c.Name
		if parent != "" {
			// The library names the program's own commands itself.
			helpName = parent + " " + c.Name
			c.HelpName = helpName
		}
		c.OnUsageError = onUsageError
		// help is commandLine's and helpAction's, never the library's,
		// which exits 1 for an unknown topic.
		c.HideHelpCommand = true
		c.Flags = append(c.Flags, cli.HelpFlag)
		if c.Action == nil {
			c.Action = groupAction
			c.UsageText = helpName + " COMMAND [COMMAND OPTIONS] [ARGUMENTS...]"
		} else {
			c.Flags = append(c.Flags, missingFlags(c.Flags, verbosityFlags())...)
			c.Action = checkedAction(c.Action, takeRequired(c.Flags))
		}
		prepareCommands(c.Subcommands, helpName)
	}
}

// missingFlags returns those of flags that defined does not have (by
// their first name).
func missingFlags(defined, flags []cli.Flag) []cli.Flag {
	var missing []cli.Flag
	for _, f := range flags {
		if findFlag(defined, f.Names()[0]) == nil {
			missing = append(missing, f)
		}
	}
	return missing
}

// checkedAction runs a command's action once the command line is checked
// as far as the command's definition tells: no unknown subcommand, no
// argument where its help shows none, every required flag given, not both
// --quiet and --verbose.
func checkedAction(action cli.ActionFunc, required []string) cli.ActionFunc {
	return func(c *cli.Context) error {
		args := c.Args()
		name := commandName(c.Command)
		if len(c.Command.Subcommands) > 0 && args.Present() {
			return unknownCommand(c.Command, args.First())
		}
		if strings.TrimSpace(c.Command.ArgsUsage) == "" && args.Present() {
			return usageError{fmt.Errorf("%s takes no arguments, got %q (see %s --help)", name, args.First(), c.Command.HelpName)}
		}
		for _, flag := range required {
			if !c.IsSet(flag) {
				return usageError{fmt.Errorf("%s needs %s (see %s --help)", name, flagSpelling(flag), c.Command.HelpName)}
			}
		}
		if quiet, verbose := verbosity(c); quiet && verbose {
			return usageError{errors.New("--quiet and --verbose contradict each other: give one of them")}
		}
		return action(c)
	}
}

// commandName is the name of a command with its group's ("job run"), for
// messages: the library's FullName is the command's own name alone.
func commandName(cmd *cli.Command) string {
	return strings.TrimPrefix(cmd.HelpName, "nightjar ")
}

// takeRequired returns the names of the required flags among flags and
// makes them optional to the library, which would print the command's
// help on stdout before its error: checkedAction checks them instead.
func takeRequired(flags []cli.Flag) []string {
	var names []string
	for _, f := range flags {
		if r, ok := f.(cli.RequiredFlag); !ok || !r.IsRequired() {
			continue
		}
		switch f := f.(type) {
		case *cli.StringFlag:
			f.Required = false
		case *cli.StringSliceFlag:
			f.Required = false
		case *cli.IntFlag:
			f.Required = false
		default:
			continue // the library checks it, as before
		}
		names = append(names, f.Names()[0])
	}
	return names
}

// onUsageError makes a flag the library cannot read a usage error (exit
// 2) of one line, instead of the library's help dump or its exit 1; an
// unknown flag is named with the nearest of the command's flags.
func onUsageError(c *cli.Context, err error, _ bool) error {
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !unknown {
		return usageError{err}
	}
	var names []string
	for _, f := range c.Command.Flags {
		names = append(names, f.Names()...)
	}
	return usageError{fmt.Errorf("%w%s", err, suggestion(name, names, flagSpelling, c.Command.HelpName))}
}

// flagSpelling is how a flag called name is written: -r, --repo.
func flagSpelling(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// tuneGCForBackup makes the garbage collector work at 50% heap growth
// instead of 100% for commands that back up, unless GOGC is set. A
// backup's live heap is mostly reused pack buffers while hashing and
// compression make short-lived garbage: this keeps its peak RSS about
// 55 MiB lower for no measurable CPU. Restore is not tuned: for it (and
// for check, before check streamed its packs) it cost 10 to 20% more CPU
// (docs/PERFORMANCE.md); check is tuned by tuneGCForCheck.
func tuneGCForBackup() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}
