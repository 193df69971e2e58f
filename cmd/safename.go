package cmd

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// terminalSafe returns a name from a snapshot as it may be printed: control
// characters (C0, DEL, C1: ESC among them, which could steer a terminal,
// and newlines, which would break the one-line-per-entry output) and bytes
// that are not UTF-8 are written as Go escapes (\x1b, \n, \u009b, \xff).
// Every other character, backslashes among them, stays as it is. --json
// output carries names exactly and does not need this.
func terminalSafe(name string) string { return escapeControls(name, false) }

// terminalSafeText is terminalSafe for a message: its line breaks and tabs
// stay, every other control character is escaped, so that a name quoted in
// an error or a warning (a file's, a remote's answer) cannot steer the
// terminal it is printed on.
func terminalSafeText(msg string) string { return escapeControls(msg, true) }

// escapeControls writes the control characters and the bytes that are not
// UTF-8 of s as Go escapes, except newlines and tabs when keepLines.
func escapeControls(s string, keepLines bool) string {
	if !needsEscape(s, keepLines) {
		return s
	}
	name := s
	var b strings.Builder
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, name[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(name[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(name string, keepLines bool) bool {
	for _, r := range name {
		if keepLines && (r == '\n' || r == '\t') {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			return true
		}
	}
	return false
}
