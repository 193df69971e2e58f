package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// terminal is where a password is typed: it shows a prompt and reads one
// line without echoing it.
type terminal interface {
	ReadPassword(prompt string) ([]byte, error)
}

// terminalOpener gives the terminal passwords are typed at, with the
// function that releases it; ok is false when there is none.
type terminalOpener func(c *cli.Context) (t terminal, release func(), ok bool)

// terminalKey is where tests leave a terminalOpener with a fake terminal
// in the app's Metadata; without one, passwords are typed at the
// process's terminal.
const terminalKey = "terminal"

// openTerminal returns the terminal passwords are typed at: the app's
// opener's, or, when standard input is a terminal, that terminal; ok is
// false when there is none (cron, a pipe), and nothing is asked.
func openTerminal(c *cli.Context) (t terminal, release func(), ok bool) {
	if open, set := c.App.Metadata[terminalKey].(terminalOpener); set {
		return open(c)
	}
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		return nil, nil, false
	}
	// The prompt goes to the terminal itself, so that it is seen also
	// when standard error is redirected.
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		return fileTerminal{in: tty, out: tty}, func() { _ = tty.Close() }, true
	}
	return fileTerminal{in: os.Stdin, out: c.App.ErrWriter}, func() {}, true
}

// fileTerminal reads passwords from a terminal's file without echo.
type fileTerminal struct {
	in  *os.File
	out io.Writer
}

func (t fileTerminal) ReadPassword(prompt string) ([]byte, error) {
	fmt.Fprint(t.out, prompt)
	pw, err := term.ReadPassword(int(t.in.Fd()))
	fmt.Fprintln(t.out)
	return pw, err
}

// askNewPassword has a new password typed twice at the terminal, with
// prompt first; an empty one and two that differ are refused. Without a
// terminal it is refused with a line naming sources, the other ways to
// give it.
func askNewPassword(c *cli.Context, prompt, sources string) ([]byte, error) {
	t, release, ok := openTerminal(c)
	if !ok {
		return nil, usageError{fmt.Errorf("no new password given: use %s, or type it at a terminal", sources)}
	}
	defer release()
	pw, err := t.ReadPassword(prompt)
	if err != nil {
		return nil, fmt.Errorf("read password: %w", err)
	}
	if len(pw) == 0 {
		return nil, usageError{errors.New("empty password typed: a password cannot be empty")}
	}
	again, err := t.ReadPassword("enter the password again: ")
	if err != nil {
		return nil, fmt.Errorf("read password: %w", err)
	}
	if !bytes.Equal(pw, again) {
		return nil, usageError{errors.New("the passwords typed differ: type the same password twice")}
	}
	return pw, nil
}

// hasTerminal reports whether a password can be typed at a terminal.
func hasTerminal(c *cli.Context) bool {
	_, release, ok := openTerminal(c)
	if ok {
		release()
	}
	return ok
}
