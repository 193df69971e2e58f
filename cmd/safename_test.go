package cmd

import "testing"

// A name printed to a terminal carries no control character raw; ordinary
// names, non-ASCII letters among them, are printed as they are.
func TestTerminalSafe(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "/home/a b/report.txt", "/home/a b/report.txt"},
		{"non-ASCII letters stay", "/données/日本", "/données/日本"},
		{"a backslash stays", `/a\b`, `/a\b`},
		{"ESC of a colour sequence", "/x\x1b[31mred", `/x\x1b[31mred`},
		{"newline and carriage return", "/a\nb\rc", `/a\nb\rc`},
		{"tab", "/a\tb", `/a\tb`},
		{"BEL and DEL", "/a\x07b\x7f", `/a\x07b\x7f`},
		{"C1 control (CSI)", "/a\u009bb", `/a\u009bb`},
		{"bytes that are not UTF-8", "/a\xff\xfeb", `/a\xff\xfeb`},
		{"U+FFFD written as UTF-8 stays", "/a\uFFFDb", "/a\uFFFDb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := terminalSafe(tc.in); got != tc.want {
				t.Errorf("terminalSafe(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
