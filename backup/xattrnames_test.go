package backup

import (
	"slices"
	"testing"
)

func TestParseXattrList(t *testing.T) {
	cases := []struct {
		name string
		buf  string
		want []string
	}{
		{"none", "", nil},
		{"one", "user.a\x00", []string{"user.a"}},
		{"several, in the order listed", "user.b\x00security.selinux\x00com.apple.quarantine\x00", []string{"user.b", "security.selinux", "com.apple.quarantine"}},
		{"empty names are dropped", "\x00user.a\x00\x00", []string{"user.a"}},
		{"a name without its NUL is not listed", "user.a\x00user.b", []string{"user.a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseXattrList([]byte(tc.buf)); !slices.Equal(got, tc.want) {
				t.Errorf("parseXattrList(%q) = %q, want %q", tc.buf, got, tc.want)
			}
		})
	}
}

func TestParseExtattrList(t *testing.T) {
	cases := []struct {
		name string
		buf  string
		want []string
	}{
		{"none", "", nil},
		{"one", "\x03abc", []string{"user.abc"}},
		{"several", "\x01a\x02bc\x05mime.", []string{"user.a", "user.bc", "user.mime."}},
		{"a zero length is skipped", "\x00\x01a", []string{"user.a"}},
		{"a length past the end ends the list", "\x01a\x09bc", []string{"user.a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseExtattrList([]byte(tc.buf), "user."); !slices.Equal(got, tc.want) {
				t.Errorf("parseExtattrList(%q) = %q, want %q", tc.buf, got, tc.want)
			}
		})
	}
}
