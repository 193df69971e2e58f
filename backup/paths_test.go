package backup

import (
	"slices"
	"testing"
)

func TestUnixSourceElements(t *testing.T) {
	cases := []struct {
		name string
		path string
		want []string
	}{
		{"the root has no levels", "/", nil},
		{"one level", "/home", []string{"home"}},
		{"each element a level", "/home/ann/docs", []string{"home", "ann", "docs"}},
		{"a drive-like name is an ordinary name", "/C:/x", []string{"C:", "x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := unixSourceElements(tc.path)
			if !slices.Equal(got, tc.want) {
				t.Errorf("unixSourceElements(%q) = %q, want %q", tc.path, got, tc.want)
			}
			if len(got) > 0 {
				if back := unixOSPath(got); back != tc.path {
					t.Errorf("unixOSPath(%q) = %q, want the source %q back", got, back, tc.path)
				}
			}
		})
	}
}

func TestWindowsSourceElements(t *testing.T) {
	cases := []struct {
		name    string
		path    string
		want    []string
		osPath  string // what the levels lead back to
		refused bool
	}{
		{"a drive's root is its letter", `C:\`, []string{"C"}, `C:\`, false},
		{"folders below the drive", `C:\Users\ann`, []string{"C", "Users", "ann"}, `C:\Users\ann`, false},
		{"a lower-case drive letter is the same drive", `d:\data`, []string{"D", "data"}, `D:\data`, false},
		{"a space or a dot inside a name stays", `C:\Program Files\a.b`, []string{"C", "Program Files", "a.b"}, `C:\Program Files\a.b`, false},
		{"a network share is refused", `\\server\share\x`, nil, "", true},
		{"a device path is refused", `\\?\C:\x`, nil, "", true},
		{"a path without a drive is refused", `\Users\ann`, nil, "", true},
		{"a digit is no drive", `1:\x`, nil, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := windowsSourceElements(tc.path)
			if tc.refused {
				if err == nil {
					t.Fatalf("windowsSourceElements(%q) = %q, want it refused", tc.path, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("windowsSourceElements(%q): %v", tc.path, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("windowsSourceElements(%q) = %q, want %q", tc.path, got, tc.want)
			}
			if back := windowsOSPath(got); back != tc.osPath {
				t.Errorf("windowsOSPath(%q) = %q, want %q", got, back, tc.osPath)
			}
		})
	}
}

func TestWithinPath(t *testing.T) {
	cases := []struct {
		name   string
		dir, p string
		sep    string
		want   bool
	}{
		{"unix: itself", "/a", "/a", "/", true},
		{"unix: below", "/a", "/a/b", "/", true},
		{"unix: a sibling with the same prefix is not below", "/a", "/ab", "/", false},
		{"unix: everything is below the root", "/", "/x/y", "/", true},
		{"windows: below", `C:\a`, `C:\a\b`, `\`, true},
		{"windows: a sibling with the same prefix is not below", `C:\a`, `C:\ab`, `\`, false},
		{"windows: below the drive's root", `C:\`, `C:\x`, `\`, true},
		{"windows: another drive is not below", `C:\`, `D:\x`, `\`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := withinPath(tc.dir, tc.p, tc.sep); got != tc.want {
				t.Errorf("withinPath(%q, %q, %q) = %v, want %v", tc.dir, tc.p, tc.sep, got, tc.want)
			}
		})
	}
}

func TestWindowsTreePath(t *testing.T) {
	cases := []struct {
		name, path, want string
	}{
		{"a drive's root", `C:\`, "/C"},
		{"a file below a folder", `c:\Users\ann\x.tmp`, "/C/Users/ann/x.tmp"},
		{"a network path stays as it is", `\\host\share\x`, `\\host\share\x`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := windowsTreePath(tc.path); got != tc.want {
				t.Errorf("windowsTreePath(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}
