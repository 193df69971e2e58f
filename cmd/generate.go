package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

func generateCommand() *cli.Command {
	return &cli.Command{
		Name:      "generate",
		Usage:     "write shell completion scripts and man pages, made from the command definitions",
		ArgsUsage: " ",
		Description: `Writes what is asked for, as restic's generate does: a completion script for
bash, zsh or fish (to FILE, or to standard output for -), and one man page
per command (nightjar.1, nightjar-backup.1, nightjar-job-run.1, ...) into DIR,
which is made if missing. For example:

   nightjar generate --bash-completion /etc/bash_completion.d/nightjar
   nightjar generate --zsh-completion ~/.zfunc/_nightjar
   nightjar generate --fish-completion ~/.config/fish/completions/nightjar.fish
   nightjar generate --man /usr/local/share/man/man1`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bash-completion", Usage: "write the bash completion script to `FILE` (- for standard output)"},
			&cli.StringFlag{Name: "zsh-completion", Usage: "write the zsh completion script to `FILE` (- for standard output)"},
			&cli.StringFlag{Name: "fish-completion", Usage: "write the fish completion script to `FILE` (- for standard output)"},
			&cli.StringFlag{Name: "man", Usage: "write one man page per command into `DIR`"},
		},
		Action: runGenerate,
	}
}

func runGenerate(c *cli.Context) error {
	scripts := []struct {
		flag  string
		write func(io.Writer, *cli.App) error
	}{
		{"bash-completion", writeBashCompletion},
		{"zsh-completion", writeZshCompletion},
		{"fish-completion", writeFishCompletion},
	}
	asked := false
	for _, s := range scripts {
		file := c.String(s.flag)
		if file == "" {
			continue
		}
		asked = true
		if err := writeTo(c.App.Writer, file, func(w io.Writer) error { return s.write(w, c.App) }); err != nil {
			return fmt.Errorf("write the %s script: %w", strings.TrimSuffix(s.flag, "-completion"), err)
		}
	}
	if dir := c.String("man"); dir != "" {
		asked = true
		if err := writeManPages(dir, c.App); err != nil {
			return fmt.Errorf("write man pages: %w", err)
		}
	}
	if !asked {
		return usageError{errors.New("generate needs at least one of --bash-completion, --zsh-completion, --fish-completion or --man (see nightjar generate --help)")}
	}
	return nil
}

// writeTo runs write on stdout when file is "-", else on file, which it
// replaces.
func writeTo(stdout io.Writer, file string, write func(io.Writer) error) error {
	if file == "-" {
		return write(stdout)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// commandPath is a command with the names that lead to it from the
// program: "job run" is {"job", "run"}.
type commandPath struct {
	names []string
	cmd   *cli.Command
}

// visibleCommands lists every command help shows, parents before their
// subcommands.
func visibleCommands(cmds []*cli.Command, parent []string) []commandPath {
	var out []commandPath
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		names := append(slices.Clip(parent), c.Name)
		out = append(out, commandPath{names, c})
		out = append(out, visibleCommands(c.Subcommands, names)...)
	}
	return out
}

// subcommandNames lists the names (not aliases) of the visible commands
// of cmds.
func subcommandNames(cmds []*cli.Command) []string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return names
}

// flagSpellings lists every visible flag of flags as typed: --repo, -r.
func flagSpellings(flags []cli.Flag) []string {
	var out []string
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		for _, name := range f.Names() {
			out = append(out, flagSpelling(name))
		}
	}
	return out
}

// writeBashCompletion writes a bash completion script: the words after
// nightjar that name commands choose the command, and the word being
// completed is one of its subcommands or, when it starts with -, one of
// its flags; else bash completes file names.
func writeBashCompletion(w io.Writer, app *cli.App) error {
	var b strings.Builder
	b.WriteString(`# bash completion for nightjar, written by "nightjar generate --bash-completion".

# _nightjar_commands COMMAND: the subcommands of COMMAND ("" for nightjar's own).
_nightjar_commands() {
    case "$1" in
`)
	fmt.Fprintf(&b, "    '') echo %s ;;\n", shellQuote(strings.Join(append(subcommandNames(app.Commands), helpCommandName), " ")))
	for _, p := range visibleCommands(app.Commands, nil) {
		if len(p.cmd.Subcommands) > 0 {
			fmt.Fprintf(&b, "    %s) echo %s ;;\n", shellQuote(strings.Join(p.names, " ")), shellQuote(strings.Join(subcommandNames(p.cmd.Subcommands), " ")))
		}
	}
	b.WriteString(`    esac
}

# _nightjar_flags COMMAND: the flags of COMMAND ("" for nightjar's own).
_nightjar_flags() {
    case "$1" in
`)
	fmt.Fprintf(&b, "    '') echo %s ;;\n", shellQuote(strings.Join(flagSpellings(app.VisibleFlags()), " ")))
	for _, p := range visibleCommands(app.Commands, nil) {
		fmt.Fprintf(&b, "    %s) echo %s ;;\n", shellQuote(strings.Join(p.names, " ")), shellQuote(strings.Join(flagSpellings(p.cmd.VisibleFlags()), " ")))
	}
	b.WriteString(`    esac
}

_nightjar() {
    local cur="${COMP_WORDS[COMP_CWORD]}" command="" word i
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        [[ $word == -* ]] && continue
        if [[ " $(_nightjar_commands "$command") " == *" $word "* ]]; then
            command="${command:+$command }$word"
        fi
    done
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_nightjar_flags "$command")" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$(_nightjar_commands "$command")" -- "$cur"))
    fi
}

complete -o default -F _nightjar nightjar
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeZshCompletion writes a zsh completion script (#compdef, for a
// folder of $fpath): commands with their descriptions, flags, and file
// names where a command takes arguments.
func writeZshCompletion(w io.Writer, app *cli.App) error {
	var b strings.Builder
	b.WriteString(`#compdef nightjar
# zsh completion for nightjar, written by "nightjar generate --zsh-completion".

# _nightjar_commands COMMAND: the subcommands of COMMAND ("" for nightjar's
# own), one "name:description" a line.
_nightjar_commands() {
    case "$1" in
`)
	describe := func(cmds []*cli.Command) string {
		var lines []string
		for _, c := range cmds {
			if !c.Hidden {
				lines = append(lines, c.Name+":"+strings.ReplaceAll(c.Usage, ":", `\:`))
			}
		}
		return shellQuote(strings.Join(lines, "\n"))
	}
	fmt.Fprintf(&b, "    '') print -r -- %s ;;\n", describe(app.Commands))
	for _, p := range visibleCommands(app.Commands, nil) {
		if len(p.cmd.Subcommands) > 0 {
			fmt.Fprintf(&b, "    %s) print -r -- %s ;;\n", shellQuote(strings.Join(p.names, " ")), describe(p.cmd.Subcommands))
		}
	}
	b.WriteString(`    esac
}

# _nightjar_flags COMMAND: the flags of COMMAND ("" for nightjar's own).
_nightjar_flags() {
    case "$1" in
`)
	fmt.Fprintf(&b, "    '') print -r -- %s ;;\n", shellQuote(strings.Join(flagSpellings(app.VisibleFlags()), " ")))
	for _, p := range visibleCommands(app.Commands, nil) {
		fmt.Fprintf(&b, "    %s) print -r -- %s ;;\n", shellQuote(strings.Join(p.names, " ")), shellQuote(strings.Join(flagSpellings(p.cmd.VisibleFlags()), " ")))
	}
	b.WriteString(`    esac
}

_nightjar() {
    local command="" word i
    local -a subcommands names
    for ((i = 2; i < CURRENT; i++)); do
        word="${words[i]}"
        [[ $word == -* ]] && continue
        names=(${${(f)"$(_nightjar_commands "$command")"}%%:*})
        if (( ${names[(Ie)$word]} )); then
            command="${command:+$command }$word"
        fi
    done
    if [[ $PREFIX == -* ]]; then
        compadd -- ${=$(_nightjar_flags "$command")}
        return
    fi
    subcommands=(${(f)"$(_nightjar_commands "$command")"})
    if (( ${#subcommands} )); then
        _describe -t commands 'nightjar command' subcommands
    else
        _files
    fi
}

_nightjar "$@"
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFishCompletion writes the fish completion script the CLI library
// makes from the command definitions.
func writeFishCompletion(w io.Writer, app *cli.App) error {
	script, err := app.ToFishCompletion()
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, script)
	return err
}

// writeManPages writes one man page (section 1) per command into dir:
// nightjar.1 for the program, nightjar-job-run.1 for "job run".
func writeManPages(dir string, app *cli.App) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	commands := visibleCommands(app.Commands, nil)
	var all []string
	for _, p := range commands {
		all = append(all, manName(p.names))
	}
	program := manPage{name: "nightjar", usage: app.Usage, description: app.Description, synopsis: "nightjar [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGUMENTS]",
		commands: app.VisibleCommands(), flags: app.VisibleFlags(), flagsTitle: "GLOBAL OPTIONS", seeAlso: all}
	if err := program.write(dir); err != nil {
		return err
	}
	for _, p := range commands {
		page := manPage{name: manName(p.names), usage: p.cmd.Usage, description: p.cmd.Description,
			synopsis: "nightjar " + strings.Join(p.names, " "), commands: p.cmd.VisibleCommands(), flags: p.cmd.VisibleFlags(), flagsTitle: "OPTIONS"}
		if len(p.cmd.Subcommands) > 0 {
			page.synopsis += " COMMAND"
		}
		if len(p.cmd.VisibleFlags()) > 0 {
			page.synopsis += " [OPTIONS]"
		}
		if args := strings.TrimSpace(p.cmd.ArgsUsage); args != "" {
			page.synopsis += " " + args
		}
		page.seeAlso = append(page.seeAlso, "nightjar")
		if len(p.names) > 1 {
			page.seeAlso = append(page.seeAlso, manName(p.names[:len(p.names)-1]))
		}
		for _, sub := range p.cmd.VisibleCommands() {
			page.seeAlso = append(page.seeAlso, manName(append(slices.Clip(p.names), sub.Name)))
		}
		if err := page.write(dir); err != nil {
			return err
		}
	}
	return nil
}

// manName is the name of the man page of a command: nightjar-job-run.
func manName(names []string) string {
	return strings.Join(append([]string{"nightjar"}, names...), "-")
}

// manPage is what one man page says.
type manPage struct {
	name, usage, description, synopsis string
	commands                           []*cli.Command
	flags                              []cli.Flag
	flagsTitle                         string
	seeAlso                            []string
}

func (m manPage) write(dir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"nightjar %s\" \"nightjar manual\"\n", roff(strings.ToUpper(m.name)), roff(buildVersion()))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roff(m.name), roff(m.usage))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B %s\n", roff(m.synopsis))
	if m.description != "" {
		fmt.Fprintf(&b, ".SH DESCRIPTION\n%s\n", roffText(m.description))
	}
	if len(m.commands) > 0 {
		b.WriteString(".SH COMMANDS\n")
		for _, c := range m.commands {
			fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", roff(strings.Join(c.Names(), ", ")), roff(c.Usage))
		}
	}
	if len(m.flags) > 0 {
		fmt.Fprintf(&b, ".SH %s\n", m.flagsTitle)
		for _, f := range m.flags {
			term, text := manFlag(f)
			fmt.Fprintf(&b, ".TP\n%s\n%s\n", term, text)
		}
	}
	if len(m.seeAlso) > 0 {
		refs := make([]string, len(m.seeAlso))
		for i, name := range m.seeAlso {
			refs[i] = fmt.Sprintf("\\fB%s\\fR(1)", roff(name))
		}
		fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", strings.Join(refs, ", "))
	}
	return os.WriteFile(filepath.Join(dir, m.name+".1"), []byte(b.String()), 0o644)
}

// manFlag is the term (its names and value) and the text of a flag in a
// man page.
func manFlag(f cli.Flag) (term, text string) {
	doc, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return roff(strings.Join(f.Names(), ", ")), ""
	}
	usage := doc.GetUsage()
	placeholder := "VALUE"
	if i := strings.IndexByte(usage, '`'); i >= 0 {
		if j := strings.IndexByte(usage[i+1:], '`'); j >= 0 {
			placeholder = usage[i+1 : i+1+j]
			usage = usage[:i] + placeholder + usage[i+2+j:]
		}
	}
	var names []string
	for _, name := range f.Names() {
		spelled := `\fB` + roff(flagSpelling(name)) + `\fR`
		if doc.TakesValue() {
			spelled += ` \fI` + roff(placeholder) + `\fR`
		}
		names = append(names, spelled)
	}
	if def := doc.GetValue(); doc.TakesValue() && def != "" && def != `""` {
		usage += " (default: " + def + ")"
	}
	if env := doc.GetEnvVars(); len(env) > 0 {
		usage += " [$" + strings.Join(env, ", $") + "]"
	}
	return strings.Join(names, ", "), roff(usage)
}

// roff escapes text for one line of a man page: backslashes and hyphens.
func roff(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

// roffText escapes a text of several lines, keeping a line that starts
// with a dot or quote from being read as a request, and an empty line
// as a paragraph break.
func roffText(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		line = roff(line)
		switch {
		case strings.TrimSpace(line) == "":
			line = ".PP"
		case strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'"):
			line = `\&` + line
		}
		lines[i] = line
	}
	return strings.Join(lines, "\n")
}
