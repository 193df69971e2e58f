package backup

import "testing"

func TestWindowsMode(t *testing.T) {
	cases := []struct {
		name  string
		attrs uint32
		want  uint32
	}{
		{"a plain file", 0x20, 0o666}, // FILE_ATTRIBUTE_ARCHIVE
		{"a read-only file", fileAttributeReadOnly, 0o444},
		{"a hidden, read-only file", fileAttributeReadOnly | 0x2, 0o444},
		{"a folder", fileAttributeDirectory, 0o777},
		{"a read-only folder", fileAttributeDirectory | fileAttributeReadOnly, 0o555},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := windowsMode(tc.attrs)
			if got != tc.want {
				t.Errorf("windowsMode(%#x) = %#o, want %#o", tc.attrs, got, tc.want)
			}
			// Restore on Windows sets read-only from the owner's write
			// bit: the two must agree.
			if readOnly := tc.attrs&fileAttributeReadOnly != 0; readOnly != (got&0o200 == 0) {
				t.Errorf("windowsMode(%#x) = %#o: the owner's write bit does not tell read-only (%v)", tc.attrs, got, readOnly)
			}
		})
	}
}

// Every lack is named and says why, so that the command can print each
// once.
func TestWindowsLacksAreNamed(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range windowsLacks {
		if l.What == "" || l.Reason == "" {
			t.Errorf("lack %+v: want both a name and a reason", l)
		}
		if seen[l.What] {
			t.Errorf("lack %q named twice", l.What)
		}
		seen[l.What] = true
	}
	for _, want := range []string{"owners and groups", "permission bits", "extended attributes"} {
		if !seen[want] {
			t.Errorf("windowsLacks does not name %q", want)
		}
	}
}
