//go:build linux

package schede2e

import (
	"testing"

	"github.com/nightjar-backup/nightjar/cmd/internal/buildbin"
)

// TestSourcesAreInputs reads the sources the binary under test was built
// from, so that a change to them reruns this package's tests instead of
// reusing a cached result (see package buildbin).
func TestSourcesAreInputs(t *testing.T) {
	t.Parallel()
	if err := buildbin.ReadSources(); err != nil {
		t.Fatal(err)
	}
}
