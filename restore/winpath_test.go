package restore

import (
	"strings"
	"testing"
)

// A snapshot path goes below the target on Windows under its own name,
// except that a drive as its first element loses its colon.
func TestWindowsLocalPath(t *testing.T) {
	tests := []struct {
		name, path, want string
	}{
		{"a unix path", "/home/x/notes.txt", "/home/x/notes.txt"},
		{"a drive with its colon", "/C:/Users/x", "/C/Users/x"},
		{"the drive alone", "/C:", "/C"},
		{"a lower-case drive", "/d:/data", "/d/data"},
		{"a drive without its colon", "/C/Users/x", "/C/Users/x"},
		{"a colon name deeper down is not a drive", "/data/C:/x", "/data/C:/x"},
		{"two letters and a colon are not a drive", "/CD:/x", "/CD:/x"},
		{"a digit is not a drive letter", "/1:/x", "/1:/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := windowsLocalPath(tt.path); got != tt.want {
				t.Errorf("windowsLocalPath(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

// Names Windows forbids are refused with a reason that says what is wrong
// with them; every other name is restored as it is.
func TestWindowsRefusedName(t *testing.T) {
	tests := []struct {
		name, path string
		want       string // a part of the reason; "": restored
	}{
		{"a plain name", "/home/x/notes.txt", ""},
		{"a name with spaces and unicode", "/home/x/Café menu (1).pdf", ""},
		{"a dot file", "/home/x/.profile", ""},
		{"a drive", "/C:", ""},
		{"a colon", "/home/x/12:30 meeting", `holds ':'`},
		{"a drive name below the top", "/home/C:", `holds ':'`},
		{"a backslash, Windows' separator", `/home/x/..\..\evil`, `holds '\\'`},
		{"a question mark", "/home/x/why?", `holds '?'`},
		{"an asterisk", "/home/x/*", `holds '*'`},
		{"angle brackets", "/home/x/<a>", `holds '<'`},
		{"a double quote", `/home/x/say "hi"`, `holds '"'`},
		{"a pipe", "/home/x/a|b", `holds '|'`},
		{"a control character", "/home/x/a\tb", "control character U+0009"},
		{"a trailing dot", "/home/x/name.", "ends with a dot or a space"},
		{"a trailing space", "/home/x/name ", "ends with a dot or a space"},
		{"only dots", "/home/x/...", "ends with a dot or a space"},
		{"a reserved device", "/home/x/CON", "CON is a device name"},
		{"a reserved device in lower case", "/home/x/nul", "NUL is a device name"},
		{"a reserved device with an extension", "/home/x/aux.txt", "AUX is a device name"},
		{"a reserved device before a space", "/home/x/com1 .log", "COM1 is a device name"},
		{"a reserved port with a superscript", "/home/x/LPT¹", "LPT¹ is a device name"},
		{"the console input", "/home/x/CONIN$", "CONIN$ is a device name"},
		{"a device name as a prefix only", "/home/x/CONSOLE", ""},
		{"a port beyond 9", "/home/x/COM10", ""},
		{"a name that is not UTF-8", "/data/caf\xe9", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := windowsRefusedName(tt.path)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("%q is refused (%s), want it restored", tt.path, got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("%q: reason %q, want one that says %q", tt.path, got, tt.want)
			case tt.want != "" && !strings.HasSuffix(got, ": not restored"):
				t.Errorf("%q: reason %q does not say that it was not restored", tt.path, got)
			}
		})
	}
}

// The read-only attribute of a restored file follows its owner's write
// bit; a folder's attributes are left as they are.
func TestWindowsAttributes(t *testing.T) {
	const archive = 0x20
	tests := []struct {
		name        string
		attrs, mode uint32
		want        uint32
	}{
		{"a writable file stays writable", archive, 0o644, archive},
		{"a file without its owner's write bit becomes read-only", archive, 0o444, archive | fileAttributeReadOnly},
		{"others' write bits do not count", archive, 0o466, archive | fileAttributeReadOnly},
		{"a read-only file the snapshot lets its owner write", archive | fileAttributeReadOnly, 0o600, archive},
		{"an executable without write", 0, 0o555, fileAttributeReadOnly},
		{"a folder without write is not made read-only", fileAttributeDirectory, 0o555, fileAttributeDirectory},
		{"a read-only folder stays so", fileAttributeDirectory | fileAttributeReadOnly, 0o755, fileAttributeDirectory | fileAttributeReadOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := windowsAttributes(tt.attrs, tt.mode); got != tt.want {
				t.Errorf("windowsAttributes(%#x, %o) = %#x, want %#x", tt.attrs, tt.mode, got, tt.want)
			}
		})
	}
}
