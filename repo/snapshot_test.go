package repo_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

func TestSnapshotRoundTrip(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	tree, err := writer(t, r).SaveTree(ctx, &repo.Tree{})
	if err != nil {
		t.Fatal(err)
	}
	flush(t, r)
	at := time.Date(2025, 3, 4, 5, 6, 7, 890123456, time.UTC)
	want := &repo.Snapshot{
		ID: repo.NewSnapshotID(), Time: at, Hostname: "h", Username: "u",
		Paths: []string{"/a", "/b"}, Tags: []string{"daily"}, Excludes: []string{"*.tmp"},
		Parent: "0123", Tree: tree, ProgramVersion: "v1.2.3",
		Summary: repo.SnapshotSummary{
			Started: at.Add(-time.Minute), Finished: at, FilesNew: 1, FilesChanged: 2, FilesUnchanged: 3,
			Dirs: 4, OtherEntries: 5, BytesRead: 6, BytesAdded: 7, TotalSize: 8, FilesSkipped: 1,
			Skipped:       []repo.Skip{{Path: "/a/x", Reason: "permission denied"}},
			ChangedDuring: []string{"/a/log"}, Partial: true,
		},
	}
	if err := flush(t, r).SaveSnapshot(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := openRepo(t, be).LoadSnapshot(ctx, want.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("loaded snapshot\n%+v\nwant\n%+v", got, want)
	}

	t.Run("same ID twice", func(t *testing.T) {
		again := *want
		again.Hostname = "other"
		if err := flush(t, r).SaveSnapshot(ctx, &again); err == nil {
			t.Error("saving a second snapshot under an existing ID succeeded")
		}
		if got, _ := r.LoadSnapshot(ctx, want.ID); got == nil || got.Hostname != "h" {
			t.Error("the first snapshot was replaced")
		}
	})
	t.Run("invalid ID", func(t *testing.T) {
		bad := *want
		bad.ID = "../escape"
		if err := flush(t, r).SaveSnapshot(ctx, &bad); err == nil {
			t.Error("saving a snapshot with an invalid ID succeeded")
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, err := r.LoadSnapshot(ctx, "ffff"); !errors.Is(err, repo.ErrSnapshotNotFound) {
			t.Errorf("load of a missing snapshot: %v, want ErrSnapshotNotFound", err)
		}
	})
	t.Run("moved to another name", func(t *testing.T) {
		// The name is bound into the seal: a record copied under another
		// name is not accepted as that snapshot.
		data := load(t, be, repo.Handle{Type: repo.SnapshotFile, Name: want.ID})
		store(t, be, repo.Handle{Type: repo.SnapshotFile, Name: "copied"}, data)
		defer be.Remove(ctx, repo.Handle{Type: repo.SnapshotFile, Name: "copied"})
		if _, err := r.LoadSnapshot(ctx, "copied"); !errors.Is(err, repo.ErrIntegrity) {
			t.Errorf("load of a renamed snapshot record: %v, want ErrIntegrity", err)
		}
	})
}

func TestFindSnapshot(t *testing.T) {
	ctx := context.Background()
	r := initRepo(t, memory.New())
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	snaps := []struct {
		id    string
		hours int
		paths []string
	}{
		{"aaaa1111", 1, []string{"/home"}},
		{"aaaa2222", 3, []string{"/etc"}},
		{"bbbb3333", 2, []string{"/home"}},
		{"cccc4444", 0, []string{"/home", "/etc"}},
	}
	tree, err := writer(t, r).SaveTree(ctx, &repo.Tree{})
	if err != nil {
		t.Fatal(err)
	}
	written := flush(t, r)
	for _, s := range snaps {
		if err := written.SaveSnapshot(ctx, &repo.Snapshot{ID: s.id, Time: base.Add(time.Duration(s.hours) * time.Hour), Paths: s.paths, Tree: tree}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		ref     string
		paths   []string
		want    string // "" for an error
		wantErr error  // nil: any error
	}{
		{"full ID", "bbbb3333", nil, "bbbb3333", nil},
		{"unique prefix", "bb", nil, "bbbb3333", nil},
		{"unique longer prefix", "aaaa2", nil, "aaaa2222", nil},
		{"full ID that is also a prefix of nothing else", "aaaa1111", nil, "aaaa1111", nil},
		{"latest", "latest", nil, "aaaa2222", nil},
		{"latest of paths", "latest", []string{"/home"}, "bbbb3333", nil},
		{"latest of two paths", "latest", []string{"/home", "/etc"}, "cccc4444", nil},
		{"latest of unknown paths", "latest", []string{"/srv"}, "", repo.ErrSnapshotNotFound},
		{"ambiguous prefix", "aaaa", nil, "", nil},
		{"no match", "dddd", nil, "", repo.ErrSnapshotNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.FindSnapshot(ctx, tt.ref, tt.paths)
			if tt.want != "" {
				if err != nil || got.ID != tt.want {
					t.Fatalf("FindSnapshot(%q, %v) = %v, %v; want %s", tt.ref, tt.paths, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("FindSnapshot(%q, %v) = %s, want an error", tt.ref, tt.paths, got.ID)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("FindSnapshot(%q): %v, want %v", tt.ref, err, tt.wantErr)
			}
		})
	}
	t.Run("ambiguous prefix says so", func(t *testing.T) {
		_, err := r.FindSnapshot(ctx, "aaaa", nil)
		if err == nil || errors.Is(err, repo.ErrSnapshotNotFound) || !strings.Contains(err.Error(), "ambiguous") {
			t.Errorf("ambiguous prefix: %v, want an error that says it is ambiguous", err)
		}
	})
	t.Run("list is sorted by time", func(t *testing.T) {
		all, err := r.Snapshots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range all {
			ids = append(ids, s.ID)
		}
		if want := []string{"cccc4444", "aaaa1111", "bbbb3333", "aaaa2222"}; !slices.Equal(ids, want) {
			t.Errorf("Snapshots() order %v, want %v", ids, want)
		}
	})
	t.Run("latest of an empty repository", func(t *testing.T) {
		empty := initRepo(t, memory.New())
		if _, err := empty.FindSnapshot(ctx, "latest", nil); !errors.Is(err, repo.ErrSnapshotNotFound) {
			t.Errorf("latest of no snapshots: %v, want ErrSnapshotNotFound", err)
		}
	})
}

func TestValidSnapshotID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{repo.NewSnapshotID(), true},
		{"a", true},
		{"run-42_daily.1", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{".hidden", false},
		{"..", false},
		{"../x", false},
		{"a/b", false},
		{"a b", false},
		{"latest\n", false},
		{"caf\u00e9", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			if got := repo.ValidSnapshotID(tt.id); got != tt.want {
				t.Errorf("ValidSnapshotID(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
	a, b := repo.NewSnapshotID(), repo.NewSnapshotID()
	if a == b || len(a) != 32 {
		t.Errorf("NewSnapshotID gives %q and %q: want distinct 32-digit IDs", a, b)
	}
}
