package cmd

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// helpCommandName is the word that asks for help where a command is
// expected: "nightjar help", "nightjar help job run", "nightjar job help
// run". commandLine turns --help and -h into it too.
const helpCommandName = "help"

// helpAction is the program's action, which the library runs when no
// command is named: "help [COMMAND...]" (what commandLine makes of every
// way of asking for help) shows the help of the program or of that
// command, as restic's help does; any other word is an unknown command.
func helpAction(c *cli.Context) error {
	args := c.Args()
	switch {
	case !args.Present():
		return writeHelp(c.App.Writer, c.App, nil)
	case args.First() != helpCommandName:
		return unknownCommand(c.Command, args.First())
	}
	var cmd *cli.Command
	cmds := c.App.Commands
	if args.Len() == 2 && args.Get(1) == helpCommandName {
		return writeHelp(c.App.Writer, c.App, nil) // help on help is the program's help, which says how to ask
	}
	for _, word := range args.Tail() {
		if cmd != nil && len(cmd.Subcommands) == 0 {
			break // the words after a command are its arguments
		}
		next := findCommand(cmds, word)
		if next == nil {
			parent := c.Command
			if cmd != nil {
				parent = cmd
			}
			return usageError{fmt.Errorf("no help for %q%s", word, suggestion(word, commandNames(cmds), strconv.Quote, parent.HelpName))}
		}
		cmd, cmds = next, next.Subcommands
	}
	return writeHelp(c.App.Writer, c.App, cmd)
}

// groupAction is the action of a command that only groups subcommands:
// named alone it shows its help, and a word after it that names none of
// its subcommands is an unknown command.
func groupAction(c *cli.Context) error {
	if c.Args().Present() {
		return unknownCommand(c.Command, c.Args().First())
	}
	return writeHelp(c.App.Writer, c.App, c.Command)
}

// unknownCommand is the usage error of a word that names no subcommand of
// parent (the program's root command, or a group).
func unknownCommand(parent *cli.Command, word string) error {
	names := append(commandNames(parent.Subcommands), helpCommandName)
	return usageError{fmt.Errorf("unknown command %q%s", word, suggestion(word, names, strconv.Quote, parent.HelpName))}
}

// commandNames lists the names and aliases of cmds that help shows.
func commandNames(cmds []*cli.Command) []string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	return names
}

// writeHelp writes the help of cmd (nil: of the program) to w.
func writeHelp(w io.Writer, app *cli.App, cmd *cli.Command) error {
	switch {
	case cmd == nil:
		cli.HelpPrinter(w, cli.AppHelpTemplate, app)
	case len(cmd.Subcommands) > 0:
		cli.HelpPrinter(w, groupHelpTemplate, cmd)
	default:
		cli.HelpPrinter(w, cli.CommandHelpTemplate, cmd)
	}
	return nil
}

// groupHelpTemplate is the library's help of a command with subcommands,
// listing them without the command categories the library fills in only
// while it runs that command.
var groupHelpTemplate = strings.Replace(cli.SubcommandHelpTemplate,
	`{{template "visibleCommandCategoryTemplate" .}}`, `{{template "visibleCommandTemplate" .}}`, 1)

// suggestion ends the message about a word that names nothing known: it
// offers the nearest of names (spelled by spell), as git and restic do,
// and names the help to read. A name is near when it is at most two edits
// away (fewer for a short word) or starts with the word.
func suggestion(word string, names []string, spell func(string) string, helpName string) string {
	best := nearest(word, names)
	if len(best) == 0 {
		return fmt.Sprintf(": see %s --help", helpName)
	}
	spelled := make([]string, len(best))
	for i, name := range best {
		spelled[i] = spell(name)
	}
	return fmt.Sprintf(": did you mean %s? (see %s --help)", strings.Join(spelled, " or "), helpName)
}

// nearest returns the names nearest to word: those the fewest edits away,
// within the bound, else those that start with it (for a word of three
// letters or more).
func nearest(word string, names []string) []string {
	// One edit for a word of up to four letters (two would make "nope"
	// into "copy"), two for a longer one.
	bound := 1
	if len([]rune(word)) > 4 {
		bound = 2
	}
	var best, prefixed []string
	bestDistance := bound + 1
	for _, name := range names {
		if name == word || slices.Contains(best, name) {
			continue
		}
		d := editDistance(word, name)
		switch {
		case d > bound:
		case d < bestDistance:
			best, bestDistance = []string{name}, d
		case d == bestDistance:
			best = append(best, name)
		}
		if len(word) >= 3 && strings.HasPrefix(name, word) && !slices.Contains(prefixed, name) {
			prefixed = append(prefixed, name)
		}
	}
	if len(best) > 0 {
		return best
	}
	return prefixed
}

// editDistance is the number of single-letter insertions, deletions,
// substitutions and swaps of neighbours that turn a into b (the optimal
// string alignment distance).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
