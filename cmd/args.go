package cmd

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// commandLine puts a command line in the order the CLI library reads, so
// that flags work wherever they are given, as restic users expect:
//
//   - the log flags (--log-format, --log-level), wherever they are, go in
//     front of the command ("nightjar serve --log-format json" works as
//     "nightjar --log-format json serve");
//   - every other flag goes to the command named, also when it is given
//     before it or between a group and its subcommand ("nightjar -r REPO
//     snapshots" works as "nightjar snapshots -r REPO"); a flag given both
//     before and after the command is given twice, in that order, so the
//     one after the command wins (a repeatable flag keeps both values);
//   - a command's flags go in front of its arguments ("restore latest
//     --target DIR"), since the library stops reading flags at the first
//     argument;
//   - --help or -h anywhere, the word help where a command is expected,
//     and a group named without a subcommand, become "help COMMAND...",
//     which the program's action shows (helpAction); --version before the
//     command becomes the version command.
//
// Everything after "--" stays as it is, after everything else.
func commandLine(args []string, cmds []*cli.Command) []string {
	if len(args) < 2 {
		return args
	}
	words, tail := args[1:], []string(nil)
	if i := slices.Index(words, "--"); i >= 0 {
		words, tail = words[:i], words[i:]
	}
	var (
		logFlags, flags, path, positional []string
		cmd                               *cli.Command // the command named last
		level                             = cmds       // the commands that may be named next
		help, helpWord, wantsVersion      bool
	)
	for i := 0; i < len(words); i++ {
		a := words[i]
		if !isFlag(a) {
			if len(positional) == 0 && (cmd == nil || len(cmd.Subcommands) > 0) {
				if next := findCommand(level, a); next != nil {
					path = append(path, a)
					cmd, level = next, next.Subcommands
					continue
				}
				if a == helpCommandName && !helpWord {
					helpWord = true
					continue
				}
			}
			positional = append(positional, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case name == "help" || name == "h":
			help = true
			continue
		case name == "version" && cmd == nil:
			wantsVersion = true
			continue
		}
		taken := []string{a}
		if !hasValue && i+1 < len(words) && takesValue(name, cmd, cmds) {
			taken = append(taken, words[i+1])
			i++
		}
		if name == "log-format" || name == "log-level" {
			logFlags = append(logFlags, taken...)
		} else {
			flags = append(flags, taken...)
		}
	}
	out := append([]string{args[0]}, logFlags...)
	isGroup := cmd == nil || len(cmd.Subcommands) > 0
	switch {
	case help || helpWord || (isGroup && len(positional) == 0 && len(tail) == 0 && (cmd == nil || onlyGroups(cmd)) && !wantsVersion):
		// Help of the commands named; the words after a group that name
		// no command of it are the topic helpAction reports unknown.
		out = append(append(out, helpCommandName), path...)
		if isGroup {
			out = append(out, positional...)
		}
		return out
	case wantsVersion:
		return slices.Concat(out, []string{versionCommandName}, path, flags, positional, tail)
	case isGroup:
		// An unknown command first, so that it is reported as one
		// rather than its flags as unknown to the group.
		return slices.Concat(out, path, positional, flags, tail)
	}
	if len(tail) == 0 && slices.ContainsFunc(positional, isNegativeNumber) {
		// "runs show -5" reaches the command as an argument, which
		// says what is wrong with it, not as an unknown flag.
		positional = append([]string{"--"}, positional...)
	}
	return slices.Concat(out, path, flags, positional, tail)
}

// onlyGroups reports whether cmd only groups subcommands: it has no
// action and no flags of its own (but --help), and named alone it shows
// its help.
func onlyGroups(cmd *cli.Command) bool {
	return len(cmd.Subcommands) > 0 && !slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return f != cli.HelpFlag })
}

func isNegativeNumber(a string) bool {
	return len(a) >= 2 && a[0] == '-' && a[1] >= '0' && a[1] <= '9'
}

// isFlag reports whether a word of a command line is a flag: it starts
// with "-" and is not a negative number, such as the -1 of "monthly -1
// 03:00", or "-" alone (standard input or output).
func isFlag(a string) bool {
	return len(a) >= 2 && a[0] == '-' && !isNegativeNumber(a)
}

// takesValue reports whether the flag called name takes a value, as the
// command cmd (nil: any command, or the program) defines it: a flag given
// before its command is looked up among the flags of every command it may
// belong to.
func takesValue(name string, cmd *cli.Command, cmds []*cli.Command) bool {
	if def := findFlag(slices.Concat(logFlags(), globalFlags()), name); def != nil {
		return !isBoolFlag(def)
	}
	if cmd != nil {
		cmds = []*cli.Command{cmd}
	}
	var def cli.Flag
	walkCommands(cmds, func(c *cli.Command) {
		if def == nil {
			def = findFlag(c.Flags, name)
		}
	})
	return def != nil && !isBoolFlag(def)
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func isBoolFlag(f cli.Flag) bool {
	_, ok := f.(*cli.BoolFlag)
	return ok
}

// walkCommands calls visit on every command of cmds and of their
// subcommands, parents first.
func walkCommands(cmds []*cli.Command, visit func(*cli.Command)) {
	for _, c := range cmds {
		visit(c)
		walkCommands(c.Subcommands, visit)
	}
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// tagLists reads a repeatable tag flag as restic does: each value is a
// comma-separated list of tags (spaces around a tag are trimmed, empty
// ones dropped), and a value with no tag gives no list.
func tagLists(values []string) [][]string {
	var lists [][]string
	for _, value := range values {
		var list []string
		for _, tag := range strings.Split(value, ",") {
			if tag = strings.TrimSpace(tag); tag != "" {
				list = append(list, tag)
			}
		}
		if len(list) > 0 {
			lists = append(lists, list)
		}
	}
	return lists
}

// hasAllTagsOfAny reports whether tags hold every tag of at least one of
// lists: restic's meaning of a repeated --tag a,b filter.
func hasAllTagsOfAny(tags []string, lists [][]string) bool {
	return slices.ContainsFunc(lists, func(list []string) bool {
		return !slices.ContainsFunc(list, func(t string) bool { return !slices.Contains(tags, t) })
	})
}
