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
	"github.com/nightjar-backup/nightjar/repo/memory"
)

func TestSnapshotRoundTrip(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	tree, err := r.SaveTree(ctx, &repo.Tree{})
	if err != nil {
		t.Fatal(err)
	}
	flush(t, r)
	at := time.Date(2025, 3, 4, 5, 6, 7, 890123456, time.UTC)
	want := &repo.Snapshot{
		ID: repo.NewSnapshotID(), Time: at, Hostname: "h", Username: "u",
		Paths: []string{"/a", "/b"}, Tags: []string{"daily"}, Excludes: []string{"*.tmp"},
		Parent: "0123", Tree: tree, Inventory: []repo.ID{r.BlobID([]byte("inv"))}, ProgramVersion: "v1.2.3",
		Summary: repo.SnapshotSummary{
			Started: at.Add(-time.Minute), Finished: at, FilesNew: 1, FilesChanged: 2, FilesUnchanged: 3,
			Dirs: 4, OtherEntries: 5, BytesRead: 6, BytesAdded: 7, TotalSize: 8, FilesSkipped: 1,
			Skipped:       []repo.Skip{{Path: "/a/x", Reason: "permission denied"}},
			ChangedDuring: []string{"/a/log"}, Partial: true,
		},
	}
	if err := r.SaveSnapshot(ctx, want); err != nil {
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
		if err := r.SaveSnapshot(ctx, &again); err == nil {
			t.Error("saving a second snapshot under an existing ID succeeded")
		}
		if got, _ := r.LoadSnapshot(ctx, want.ID); got == nil || got.Hostname != "h" {
			t.Error("the first snapshot was replaced")
		}
	})
	t.Run("invalid ID", func(t *testing.T) {
		bad := *want
		bad.ID = "../escape"
		if err := r.SaveSnapshot(ctx, &bad); err == nil {
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
	for _, s := range snaps {
		if err := r.SaveSnapshot(ctx, &repo.Snapshot{ID: s.id, Time: base.Add(time.Duration(s.hours) * time.Hour), Paths: s.paths}); err != nil {
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

func TestInventory(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	tests := []struct {
		name string
		n    int
	}{
		{"empty", 0},
		{"one", 1},
		{"a few thousand", 5000},
		{"more than a blob's most", repo.InventoryBlobIDs + 5},
	}
	for ti, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := make([]repo.ID, tt.n)
			for i := range ids {
				ids[i] = r.BlobID([]byte{byte(ti), byte(i), byte(i >> 8), byte(i >> 16)})
			}
			blobs := writeInventory(t, r, ids)
			if want := expectedInventoryBlobs(ids); len(blobs) != want {
				t.Errorf("%d IDs gave %d inventory blobs, want %d by the cut rule", tt.n, len(blobs), want)
			}
			flush(t, r)
			sortIDs(ids)
			var got []repo.ID
			err := openRepo(t, be).ReadInventory(ctx, &repo.Snapshot{ID: "s", Inventory: blobs}, func(id repo.ID) error {
				got = append(got, id)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, ids) {
				t.Errorf("read back %d IDs, want the %d written in order", len(got), len(ids))
			}
		})
	}
}

// expectedInventoryBlobs counts blobs by the rule in docs/FORMAT.md: a blob
// ends after an ID whose last two bytes (big-endian) are below 64, or at
// 65,536 IDs.
func expectedInventoryBlobs(ids []repo.ID) int {
	sorted := slices.Clone(ids)
	sortIDs(sorted)
	blobs, inBlob := 0, 0
	for _, id := range sorted {
		inBlob++
		if int(id[30])<<8|int(id[31]) < 64 || inBlob == 65536 {
			blobs, inBlob = blobs+1, 0
		}
	}
	if inBlob > 0 {
		blobs++
	}
	return blobs
}

// TestInventoryOfASimilarSnapshotSharesBlobs: one changed ID in a large
// inventory changes one or two of its blobs, not all of them.
func TestInventoryOfASimilarSnapshotSharesBlobs(t *testing.T) {
	r := initRepo(t, memory.New())
	ids := make([]repo.ID, 20000)
	for i := range ids {
		ids[i] = r.BlobID([]byte{9, byte(i), byte(i >> 8)})
	}
	before := writeInventory(t, r, ids)
	ids[len(ids)/2] = r.BlobID([]byte("a changed tree"))
	after := writeInventory(t, r, ids)
	shared := map[repo.ID]bool{}
	for _, b := range before {
		shared[b] = true
	}
	changed := 0
	for _, b := range after {
		if !shared[b] {
			changed++
		}
	}
	if len(after) < 10 || changed > 2 {
		t.Errorf("one changed ID changed %d of %d inventory blobs, want at most 2 (of about 20)", changed, len(after))
	}
}

func TestInventoryWriterRejectsUnsorted(t *testing.T) {
	ctx := context.Background()
	r := initRepo(t, memory.New())
	a, b := repo.ID{1}, repo.ID{2}
	tests := []struct {
		name string
		ids  []repo.ID
	}{
		{"descending", []repo.ID{b, a}},
		{"duplicate", []repo.ID{a, a}},
		{"descending later", []repo.ID{a, b, a}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := r.NewInventoryWriter()
			var err error
			for _, id := range tt.ids {
				if err = w.Add(ctx, id); err != nil {
					break
				}
			}
			if err == nil {
				t.Errorf("Add accepted %v", tt.ids)
			}
		})
	}
}

func TestReadInventoryRejectsDamagedInventory(t *testing.T) {
	ctx := context.Background()
	r := initRepo(t, memory.New())
	a, b := repo.ID{1}, repo.ID{2}
	tests := []struct {
		name string
		data []byte
	}{
		{"unsorted", append(b[:], a[:]...)},
		{"duplicate", append(a[:], a[:]...)},
		{"partial ID", append(a[:], 7, 7, 7)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := r.BlobID(tt.data)
			if _, err := r.SaveBlob(ctx, repo.InventoryBlob, id, tt.data); err != nil {
				t.Fatal(err)
			}
			flush(t, r)
			err := r.ReadInventory(ctx, &repo.Snapshot{ID: "s", Inventory: []repo.ID{id}}, func(repo.ID) error { return nil })
			if !errors.Is(err, repo.ErrIntegrity) {
				t.Errorf("ReadInventory: %v, want ErrIntegrity", err)
			}
		})
	}
	t.Run("unsorted across blobs", func(t *testing.T) {
		first, second := b[:], a[:]
		var blobs []repo.ID
		for _, d := range [][]byte{first, second} {
			id := r.BlobID(d)
			if _, err := r.SaveBlob(ctx, repo.InventoryBlob, id, d); err != nil {
				t.Fatal(err)
			}
			blobs = append(blobs, id)
		}
		flush(t, r)
		err := r.ReadInventory(ctx, &repo.Snapshot{ID: "s", Inventory: blobs}, func(repo.ID) error { return nil })
		if !errors.Is(err, repo.ErrIntegrity) {
			t.Errorf("ReadInventory: %v, want ErrIntegrity", err)
		}
	})
}
