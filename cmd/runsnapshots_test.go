package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// runs show finds each snapshot of a run: under the ID the state database
// recorded, under another when its record was rewritten (found by the run
// it records), or not at all when it was forgotten.
func TestVerifyRunSnapshotsFindsThemByTheirRun(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := repotest.New(t, be)
	start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	run := pass.Run{ID: 5, StartedAt: start, EndedAt: start.Add(time.Minute)}
	sources := map[string]string{}
	ids := map[string]string{}
	for _, name := range []string{"kept", "rewritten", "forgotten"} {
		src := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(src, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := backup.Backup(ctx, r, backup.Options{Paths: []string{src}, Run: run.ID, Time: start.Add(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		sources[name], ids[name] = src, res.Snapshot.ID
	}
	if err := r.SaveVerification(ctx, &repo.Verification{Snapshot: ids["kept"], OK: true, Deep: true}); err != nil {
		t.Fatal(err)
	}
	// Rewrite one record under a new ID, as retagging does, and remove
	// another.
	rewritten, err := r.LoadSnapshot(ctx, ids["rewritten"])
	if err != nil {
		t.Fatal(err)
	}
	rewritten.ID = repo.NewSnapshotID()
	written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(context.Context, *repo.Writer) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := written.SaveSnapshot(ctx, rewritten); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{ids["rewritten"], ids["forgotten"]} {
		if err := be.Remove(ctx, repo.Handle{Type: repo.SnapshotFile, Name: id}); err != nil {
			t.Fatal(err)
		}
	}

	refs := []snapshotRef{
		{RepositoryID: r.ID(), SnapshotID: ids["kept"], Source: sources["kept"]},
		{RepositoryID: r.ID(), SnapshotID: ids["rewritten"], Source: sources["rewritten"]},
		{RepositoryID: r.ID(), SnapshotID: ids["forgotten"], Source: sources["forgotten"]},
		{RepositoryID: "another-repository", SnapshotID: ids["kept"], Source: sources["kept"]},
	}
	var stderr bytes.Buffer
	verifyRunSnapshots(ctx, &printer{stdout: &bytes.Buffer{}, stderr: &stderr}, r, run, refs)
	for i, want := range []snapshotRef{
		{Verified: "ok (deep)"},
		{Verified: "-", CurrentID: rewritten.ID},
		{Verified: "forgotten"},
		{}, // another repository's: not looked at
	} {
		if got := refs[i]; got.Verified != want.Verified || got.CurrentID != want.CurrentID {
			t.Errorf("snapshot %s: verified %q, now %q; want %q, %q", got.SnapshotID, got.Verified, got.CurrentID, want.Verified, want.CurrentID)
		}
	}
	if stderr.Len() > 0 {
		t.Errorf("warnings: %s", stderr.String())
	}
}
