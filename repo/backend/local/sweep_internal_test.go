package local

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
)

// TestSweepTakesOnlyThisHostsDeadFiles puts beside a dead writer's file of
// this host an unlocked file of another host, one of an older nightjar
// (no host in its name), and one this process streams a pack into but
// whose lock it lost (as on NFS, where flock is a POSIX lock that a
// second descriptor of the same process gets and then drops): the sweep
// removes only the dead writer's file, and prune's age rule (ListTemp) is
// left the other host's and the older one.
func TestSweepTakesOnlyThisHostsDeadFiles(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "repo")
	be, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, tmpDir)
	dead := ownTempPrefix() + "0123456789abcdef01234567"
	otherHost := heldTempPrefix + "00000000000000ff-0123456789abcdef01234567"
	older := heldTempPrefix + "0123456789abcdef01234567"
	for _, name := range []string{dead, otherHost, older} {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte("left by a writer"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := be.NewPackStream(ctx, repo.DataPack)
	if err != nil {
		t.Fatal(err)
	}
	ps := s.(*packStream)
	defer ps.Abort()
	if err := unlockFile(ps.f); err != nil {
		t.Fatal(err)
	}
	sw, err := be.SweepTemp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Removed != 1 || sw.Live != 1 {
		t.Errorf("sweep: %+v, want the dead writer's file removed and this process's own counted live", sw)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{filepath.Base(ps.f.Name()), otherHost, older}
	slices.Sort(left)
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("after the sweep tmp holds %q, want %q", left, want)
	}
	var listed []string
	if err := be.ListTemp(ctx, func(name string, _ int64, _ time.Time) error {
		listed = append(listed, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	if !slices.Equal(listed, []string{otherHost, older}) {
		t.Errorf("ListTemp (prune's age rule) lists %q, want the other host's and the older file", listed)
	}
	if _, err := s.Write([]byte("still writing")); err != nil {
		t.Fatal(err)
	}
}
