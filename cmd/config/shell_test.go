package config

import (
	"slices"
	"testing"
)

// A command given as a string runs with the shell each system has.
func TestShellArgvFor(t *testing.T) {
	for _, tc := range []struct {
		goos string
		want []string
	}{
		{"linux", []string{"/bin/sh", "-c", "echo hi"}},
		{"darwin", []string{"/bin/sh", "-c", "echo hi"}},
		{"freebsd", []string{"/bin/sh", "-c", "echo hi"}},
		{"windows", []string{"cmd.exe", "/C", "echo hi"}},
	} {
		if got := shellArgvFor(tc.goos, "echo hi"); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.goos, got, tc.want)
		}
	}
}
