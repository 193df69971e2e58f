package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

// hostile is a name that would clear the screen and move the cursor if a
// terminal got it raw.
const hostile = "/data/evil\x1b[2J\x1b[H\u009b31m\x07name"

// rawControl tells whether s carries a control character other than a
// line break or tab, or a byte that is not UTF-8.
func rawControl(s string) bool {
	for _, r := range s {
		if r == '\n' || r == '\t' {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			return true
		}
	}
	return false
}

// The lines backup prints for skipped files, restore for entries it did
// not restore and verify for files that differ name them escaped, and so
// do warnings and the last error line that quote a name.
func TestMessagesEscapeControlCharacters(t *testing.T) {
	skips := []repo.Skip{{Path: hostile, Reason: "open " + hostile + ": permission denied"}}
	for _, tc := range []struct {
		name  string
		print func(p *printer, stderr *bytes.Buffer)
	}{
		{"backup's skipped files", func(p *printer, _ *bytes.Buffer) { reportSkips(p, "backup", "skipped", skips) }},
		{"restore's entries not restored", func(p *printer, _ *bytes.Buffer) { reportSkips(p, "restore", "not restored", skips) }},
		{"verify's failures", func(p *printer, _ *bytes.Buffer) { reportSkips(p, "verify", "verify", skips) }},
		{"a warning", func(p *printer, _ *bytes.Buffer) { p.Warnf("cannot read %s", hostile) }},
		{"the last error line", func(_ *printer, stderr *bytes.Buffer) {
			printError(&cli.App{Metadata: map[string]any{}}, stderr, "backup "+hostile+": no space left", ExitFailure)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			tc.print(&printer{stdout: &stdout, stderr: &stderr}, &stderr)
			out := stderr.String()
			if rawControl(out) {
				t.Errorf("printed a raw control character: %q", out)
			}
			if !strings.Contains(out, `evil\x1b[2J\x1b[H\u009b31m\x07name`) {
				t.Errorf("the name is not in the message, escaped: %q", out)
			}
		})
	}
}

// A restore that cannot put a file with an ESC in its name in place
// (something is there already) names it escaped.
func TestRestoreSkipLineEscapesTheName(t *testing.T) {
	f := newReadFixture(t)
	target := t.TempDir()
	in := filepath.Join(target, f.src)
	if err := os.MkdirAll(in, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "esc\x1bname"), []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := f.run("restore", firstID, "--target", target)
	if code == ExitOK {
		t.Fatalf("restore over an existing file exited 0:\n%s", stderr)
	}
	if rawControl(stderr) {
		t.Errorf("restore printed a raw control character: %q", stderr)
	}
	if !strings.Contains(stderr, `esc\x1bname`) {
		t.Errorf("restore does not name the file it skipped, escaped: %q", stderr)
	}
}

// A message keeps its line breaks and tabs and escapes every other control
// character.
func TestTerminalSafeText(t *testing.T) {
	if got, want := terminalSafeText("a\tb\nc\x1b[Kd\re"), "a\tb\nc\\x1b[Kd\\re"; got != want {
		t.Errorf("terminalSafeText = %q, want %q", got, want)
	}
}

// Whatever the name, what terminalSafe prints carries no control character
// and is UTF-8, and a name that needs no escape is printed as it is.
func FuzzTerminalSafe(f *testing.F) {
	for _, s := range []string{"plain", hostile, "a\nb", "\xff\xfe", "\u009b", "日本", `a\x1b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := terminalSafe(name)
		if rawControl(got) || strings.ContainsAny(got, "\n\t") || !utf8.ValidString(got) {
			t.Fatalf("terminalSafe(%q) = %q still carries a control character", name, got)
		}
		if text := terminalSafeText(name); rawControl(text) || !utf8.ValidString(text) {
			t.Fatalf("terminalSafeText(%q) = %q still carries a control character", name, text)
		}
		if !needsEscape(name, false) && got != name {
			t.Fatalf("terminalSafe changed %q, which needs no escape, to %q", name, got)
		}
	})
}
