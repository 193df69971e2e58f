package cmd

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed moves a command's flags in front of its arguments, so that
// "restore latest --target DIR" works as restic users expect: the CLI
// library stops reading flags at the first argument. Everything after "--"
// stays as it is.
func interspersed(args []string, cmds []*cli.Command) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	rest := args[1:]
	// Leading global flags and the command path.
	var cmd *cli.Command
	for len(rest) > 0 {
		next := findCommand(cmds, rest[0])
		if next == nil {
			break
		}
		out = append(out, rest[0])
		rest = rest[1:]
		cmd, cmds = next, next.Subcommands
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return append(out, rest...)
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, name := range f.Names() {
			takesValue[name] = !isBool
		}
	}
	var flags, positional []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			positional = append(positional, rest[i:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' || (a[1] >= '0' && a[1] <= '9') {
			// Not a flag: an argument, or a negative number such as the
			// -1 of "monthly -1 03:00".
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue[name] && i+1 < len(rest) {
			flags = append(flags, rest[i+1])
			i++
		}
	}
	out = append(out, flags...)
	return append(out, positional...)
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
