package repo_test

import (
	"context"
	"slices"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// RemoveLocks removes the lock whose holder died and keeps the live one,
// with who holds it; with all set it removes the live one too.
func TestRemoveLocks(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	live, err := r.Lock(ctx, false, "check")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Unlock()
	liveName := names(t, be, repo.LockFile)[0]
	// Taken after the live one: taking a lock removes the dead ones.
	if _, err := r.Lock(ctx, false, "backup of job crashed"); err != nil {
		t.Fatal(err)
	}
	deadName := ""
	for _, n := range names(t, be, repo.LockFile) {
		if n != liveName {
			deadName = n
		}
	}
	be.Abandon(repo.Handle{Type: repo.LockFile, Name: deadName}) // its holder died without releasing it
	elsewhere, err := r.SaveLockObject(ctx, repo.LockInfo{Hostname: "elsewhere", PID: 77, Purpose: "backup"})
	if err != nil {
		t.Fatal(err)
	}

	states, err := r.RemoveLocks(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]repo.LockState{}
	for _, st := range states {
		byName[st.Name] = st
	}
	if st := byName[deadName]; !st.Removed || st.Alive || st.Info.Purpose != "backup of job crashed" {
		t.Errorf("dead lock: %+v, want removed, with its purpose", st)
	}
	if st := byName[liveName]; st.Removed || !st.Alive || st.Info.Purpose != "check" || st.Info.PID == 0 || st.InfoErr != nil {
		t.Errorf("live lock: %+v, want kept, alive, with its holder", st)
	}
	if st := byName[elsewhere]; st.Removed || st.Alive || !st.OtherHost || st.Info.Hostname != "elsewhere" {
		t.Errorf("dead lock of another host: %+v, want kept: its holder cannot be checked from here", st)
	}
	want := []string{liveName, elsewhere}
	slices.Sort(want)
	if got := names(t, be, repo.LockFile); !slices.Equal(sorted(got), want) {
		t.Errorf("locks left = %v, want the live one %s and the other host's %s", got, liveName, elsewhere)
	}

	states, err = r.RemoveLocks(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 2 || !states[0].Removed || !states[1].Removed {
		t.Errorf("--remove-all: %+v, want the live lock and the other host's removed", states)
	}
	if got := names(t, be, repo.LockFile); len(got) != 0 {
		t.Errorf("locks left after removing all: %v", got)
	}
	if err := live.Unlock(); err != nil {
		t.Errorf("unlock of a lock removed by another: %v", err)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
