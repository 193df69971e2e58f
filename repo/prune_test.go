package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// pruneBlobSize is the size of every data blob of the prune fixture:
// random, so that it does not compress and every blob's sealed length is
// the same.
const pruneBlobSize = 8 << 10

// pruneFixture is a repository whose snapshot "keep" stays and whose
// snapshot "old" is forgotten, with its data in packs of known use:
//
//	gone    4 blobs of old only: wholly unused once old is forgotten
//	mostly  1 blob of keep, 3 of old: 3/4 unused
//	little  3 blobs of keep, 1 of old: 1/4 unused
//	used    4 blobs of keep: wholly used
//	shared  2 blobs both snapshots use
//	trees   the trees of both snapshots: partly unused
//
// Each pack is written by a write session of its own (one packer), so
// that which blobs share a pack is fixed.
type pruneFixture struct {
	be    repo.Backend
	r     *repo.Repository
	keep  *repo.Snapshot
	old   *repo.Snapshot
	sub   repo.ID // the tree of keep's folder "data"
	packs map[string]repo.ID
	files map[string][]byte // keep's files: name -> content
}

func newPruneFixture(t *testing.T, be repo.Backend) *pruneFixture {
	t.Helper()
	oneCore(t)
	ctx := context.Background()
	f := &pruneFixture{be: be, r: initRepo(t, be), packs: map[string]repo.ID{}, files: map[string][]byte{}}
	var keepNodes, oldNodes []repo.Node
	n := 0
	file := func(name string) repo.Node {
		n++
		data := random(uint64(n), pruneBlobSize)
		return repo.Node{Name: name, Type: repo.NodeFile, Size: uint64(len(data)), Mode: 0o644,
			Content: []repo.ID{saveBlob(t, f.r, data)}}
	}
	session := func(name string, keep, old int) {
		t.Helper()
		before := names(t, be, repo.PackFile)
		for i := range keep {
			nd := file(fmt.Sprintf("%s-keep-%d", name, i))
			keepNodes = append(keepNodes, nd)
			f.files[nd.Name] = random(uint64(n), pruneBlobSize)
		}
		for i := range old {
			oldNodes = append(oldNodes, file(fmt.Sprintf("%s-old-%d", name, i)))
		}
		flush(t, f.r)
		f.packs[name] = onlyNewPack(t, be, before)
	}
	session("gone", 0, 4)
	session("mostly", 1, 3)
	session("little", 3, 1)
	session("used", 4, 0)
	before := names(t, be, repo.PackFile)
	for i := range 2 {
		nd := file(fmt.Sprintf("shared-%d", i))
		keepNodes, oldNodes = append(keepNodes, nd), append(oldNodes, nd)
		f.files[nd.Name] = random(uint64(n), pruneBlobSize)
	}
	flush(t, f.r)
	f.packs["shared"] = onlyNewPack(t, be, before)
	before = names(t, be, repo.PackFile)
	byName := func(a, b repo.Node) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(keepNodes, byName)
	slices.SortFunc(oldNodes, byName)
	sub := saveTree(t, f.r, &repo.Tree{Nodes: keepNodes})
	f.sub = sub
	oldSub := saveTree(t, f.r, &repo.Tree{Nodes: oldNodes})
	keepRoot := saveTree(t, f.r, &repo.Tree{Nodes: []repo.Node{{Name: "data", Type: repo.NodeDir, Mode: 0o755, Subtree: &sub}}})
	oldRoot := saveTree(t, f.r, &repo.Tree{Nodes: []repo.Node{{Name: "data", Type: repo.NodeDir, Mode: 0o755, Subtree: &oldSub}}})
	written := flush(t, f.r)
	f.packs["trees"] = onlyNewPack(t, be, before)
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f.old = &repo.Snapshot{ID: forgetSnapID(0, 0), Time: base, Hostname: "h", Paths: []string{"/data"}, Tree: oldRoot}
	f.keep = &repo.Snapshot{ID: forgetSnapID(0, 1), Time: base.Add(time.Hour), Hostname: "h", Paths: []string{"/data"}, Tree: keepRoot}
	for _, s := range []*repo.Snapshot{f.old, f.keep} {
		if err := written.SaveSnapshot(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// later is a clock past the default leftover age: a prune that reads it
// finds every pack a test wrote old enough to delete or repack, as a
// prune that runs hours after the backups.
func later() time.Time { return time.Now().Add(repo.DefaultLeftoverAge + time.Hour) }

// openLater opens a repository, its index loaded, whose clock is later.
func openLater(tb testing.TB, be repo.Backend) *repo.Repository {
	tb.Helper()
	r, err := repo.Open(context.Background(), be, repo.OpenOptions{Password: pw(password), Now: later})
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(r.Close)
	if err := r.LoadIndex(context.Background()); err != nil {
		tb.Fatalf("load index: %v", err)
	}
	return r
}

// onlyNewPack returns the one pack that is not in before.
func onlyNewPack(t *testing.T, be repo.Backend, before []string) repo.ID {
	t.Helper()
	var added []string
	for _, name := range names(t, be, repo.PackFile) {
		if !slices.Contains(before, name) {
			added = append(added, name)
		}
	}
	if len(added) != 1 {
		t.Fatalf("a fixture session wrote packs %v, want one", added)
	}
	id, err := repo.ParseID(added[0])
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// forgetOld forgets the fixture's snapshot "old".
func (f *pruneFixture) forgetOld(t *testing.T) {
	t.Helper()
	if _, err := f.r.Forget(context.Background(), repo.ForgetOptions{Plan: forgetIDs(f.old.ID), GroupKey: byHost}); err != nil {
		t.Fatal(err)
	}
}

// packSize returns the size of a pack file of the fixture.
func (f *pruneFixture) packSize(t *testing.T, name string) int64 {
	t.Helper()
	size, err := f.be.Stat(context.Background(), repo.Handle{Type: repo.PackFile, Name: f.packs[name].String()})
	if err != nil {
		t.Fatal(err)
	}
	return size
}

// packsLeft returns the names of the fixture's packs whose files remain.
func (f *pruneFixture) packsLeft(t *testing.T) []string {
	t.Helper()
	files := names(t, f.be, repo.PackFile)
	var left []string
	for name, id := range f.packs {
		if slices.Contains(files, id.String()) {
			left = append(left, name)
		}
	}
	slices.Sort(left)
	return left
}

// allFiles lists every object of a repository, as "type/name".
func allFiles(t *testing.T, be repo.Backend) []string {
	t.Helper()
	var out []string
	for _, ft := range []repo.FileType{repo.ConfigFile, repo.KeyFile, repo.PackFile, repo.IndexFile, repo.SnapshotFile,
		repo.LockFile, repo.PinFile, repo.ForgetFile} {
		if ft == repo.ConfigFile {
			out = append(out, "config")
			continue
		}
		for _, name := range names(t, be, ft) {
			out = append(out, string(ft)+"/"+name)
		}
	}
	slices.Sort(out)
	return out
}

// restoreFiles reads back every file of a snapshot's folder "data" from a
// freshly opened repository.
func restoreFiles(t *testing.T, be repo.Backend, snap *repo.Snapshot) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	r := openRepo(t, be)
	got := map[string][]byte{}
	err := r.Walk(ctx, snap.Tree, repo.WalkOptions{}, repo.WalkVisitor{
		Node: func(e *repo.WalkEntry) error {
			if e.Node.Type != repo.NodeFile {
				return nil
			}
			var content []byte
			for _, id := range e.Node.Content {
				data, err := r.LoadBlob(ctx, id)
				if err != nil {
					return fmt.Errorf("%s: %w", e.Path, err)
				}
				content = append(content, data...)
			}
			got[e.Node.Name] = content
			return nil
		},
	})
	if err != nil {
		t.Fatalf("restore snapshot %s: %v", snap.ID, err)
	}
	return got
}

// assertSound checks the repository with read-data (no problem, no pack
// left that no index lists unless allowed) and that snapshot keep restores
// bit-identical.
func (f *pruneFixture) assertSound(t *testing.T, unindexedAllowed bool) {
	t.Helper()
	rep, err := openRepo(t, f.be).Check(context.Background(), repo.CheckOptions{ReadDataFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("check after prune: %s", problemList(rep))
	}
	if rep.UnindexedPacks != 0 && !unindexedAllowed {
		t.Errorf("check after prune: %d packs no index lists", rep.UnindexedPacks)
	}
	got := restoreFiles(t, f.be, f.keep)
	if len(got) != len(f.files) {
		t.Errorf("snapshot keep restores %d files, want %d", len(got), len(f.files))
	}
	for name, want := range f.files {
		if !bytes.Equal(got[name], want) {
			t.Errorf("file %s of snapshot keep restores with %d bytes that differ from the %d saved", name, len(got[name]), len(want))
		}
	}
}

// After forget and prune with no unused data allowed, the wholly unused
// pack is gone, the partly used ones are repacked, check with read-data is
// clean and the snapshot that stays restores bit-identical, on both
// backends.
func TestPruneFreesExactlyTheUnusedData(t *testing.T) {
	for _, bk := range []struct {
		name string
		new  func(t *testing.T) repo.Backend
	}{
		{"local", newLocal},
		{"memory", func(*testing.T) repo.Backend { return memory.New() }},
	} {
		t.Run(bk.name, func(t *testing.T) {
			ctx := context.Background()
			f := newPruneFixture(t, bk.new(t))
			f.forgetOld(t)
			sizes := map[string]int64{}
			for name := range f.packs {
				sizes[name] = f.packSize(t, name)
			}
			res, err := openLater(t, f.be).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if left := f.packsLeft(t); !slices.Equal(left, []string{"shared", "used"}) {
				t.Errorf("packs left %v, want shared and used", left)
			}
			if res.PacksDeleted != 1 || res.BytesDeleted != sizes["gone"] {
				t.Errorf("deleted %d packs of %d bytes, want pack gone of %d", res.PacksDeleted, res.BytesDeleted, sizes["gone"])
			}
			if want := sizes["mostly"] + sizes["little"] + sizes["trees"]; res.PacksRepacked != 3 || res.BytesRepacked != want {
				t.Errorf("repacked %d packs of %d bytes, want mostly, little and trees, %d bytes", res.PacksRepacked, res.BytesRepacked, want)
			}
			if res.BytesFreed != res.BytesDeleted+res.BytesRepacked || res.UnusedLeft != 0 || res.PacksWritten == 0 {
				t.Errorf("result %+v: want freed = deleted + repacked, nothing unused left, packs written", res)
			}
			// keep's blobs: 1+3+4 own, 2 shared, and its two trees.
			if res.BlobsUsed != 12 || res.Snapshots != 1 {
				t.Errorf("%d blobs used by %d snapshots, want 12 by 1", res.BlobsUsed, res.Snapshots)
			}
			f.assertSound(t, false)
			// A second prune finds nothing to do.
			res, err = openLater(t, f.be).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.PacksDeleted+res.PacksRepacked+res.LeftoversDeleted != 0 || res.BlobsUnused != 0 {
				t.Errorf("second prune: %+v, want nothing to do", res)
			}
		})
	}
}

// packNames are the fixture's packs.
var packNames = []string{"gone", "little", "mostly", "shared", "trees", "used"}

// Prune repacks the partly used packs with the most unused bytes first
// until the unused bytes left are within MaxUnused, and never more pack
// bytes than MaxRepackSize; the wholly unused pack goes whatever the
// limits.
func TestPruneRepacksByMaxUnusedWithinMaxRepackSize(t *testing.T) {
	blob := int64(pruneBlobSize) // about one blob's sealed bytes
	tests := []struct {
		name         string
		maxUnused    repo.UnusedLimit
		maxRepack    func(size func(string) int64) int64
		wantRepacked []string
	}{
		{name: "unlimited: only the wholly unused pack goes", maxUnused: repo.UnusedLimit{Unlimited: true}},
		{name: "none may stay", wantRepacked: []string{"little", "mostly", "trees"}},
		{name: "two blobs may stay: the pack with most unused goes", maxUnused: repo.UnusedLimit{Bytes: 2 * blob},
			wantRepacked: []string{"mostly"}},
		{name: "20% of what stays: the pack with most unused goes", maxUnused: repo.UnusedLimit{Fraction: 0.20},
			wantRepacked: []string{"mostly"}},
		{name: "40% of what stays: nothing to repack", maxUnused: repo.UnusedLimit{Fraction: 0.40}},
		{name: "repack size fits one pack", maxRepack: func(size func(string) int64) int64 { return size("mostly") },
			wantRepacked: []string{"mostly"}},
		{name: "repack size skips the pack that does not fit", maxRepack: func(size func(string) int64) int64 {
			return size("mostly") + size("trees")
		}, wantRepacked: []string{"mostly", "trees"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newPruneFixture(t, memory.New())
			f.forgetOld(t)
			opts := repo.PruneOptions{MaxUnused: tc.maxUnused, TempDir: t.TempDir()}
			if tc.maxRepack != nil {
				opts.MaxRepackSize = tc.maxRepack(func(name string) int64 { return f.packSize(t, name) })
			}
			var wantBytes int64
			for _, name := range tc.wantRepacked {
				wantBytes += f.packSize(t, name)
			}
			res, err := openLater(t, f.be).Prune(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			var wantLeft []string
			for _, name := range packNames {
				if name != "gone" && !slices.Contains(tc.wantRepacked, name) {
					wantLeft = append(wantLeft, name)
				}
			}
			if left := f.packsLeft(t); !slices.Equal(left, wantLeft) {
				t.Errorf("packs left %v, want %v (repacked %v)", left, wantLeft, tc.wantRepacked)
			}
			if res.PacksRepacked != len(tc.wantRepacked) || res.BytesRepacked != wantBytes || res.PacksDeleted != 1 {
				t.Errorf("repacked %d packs of %d bytes and deleted %d, want %d of %d and 1", res.PacksRepacked, res.BytesRepacked,
					res.PacksDeleted, len(tc.wantRepacked), wantBytes)
			}
			if opts.MaxRepackSize > 0 && res.BytesRepacked > opts.MaxRepackSize {
				t.Errorf("repacked %d bytes, more than the limit %d", res.BytesRepacked, opts.MaxRepackSize)
			}
			if res.BytesUnused-res.UnusedLeft <= 0 && len(tc.wantRepacked) > 0 {
				t.Errorf("unused %d, left %d: nothing freed", res.BytesUnused, res.UnusedLeft)
			}
			f.assertSound(t, false)
		})
	}
}

// A snapshot that stays and cannot be read, or a tree it references that
// cannot be decoded, stops prune with ErrInvalidManifest naming the
// snapshot, and nothing is written or deleted.
func TestPruneStopsOnAnInvalidManifest(t *testing.T) {
	tests := []struct {
		name     string
		damage   func(t *testing.T, f *pruneFixture)
		wantTree bool
	}{
		{name: "damaged snapshot", damage: func(t *testing.T, f *pruneFixture) {
			h := repo.Handle{Type: repo.SnapshotFile, Name: f.keep.ID}
			data := load(t, f.be, h)
			store(t, f.be, h, flipped(data, len(data)-5))
		}},
		{name: "damaged tree", wantTree: true, damage: func(t *testing.T, f *pruneFixture) {
			b, ok := openRepo(t, f.be).Index().Lookup(f.sub)
			if !ok {
				t.Fatal("the tree of keep's folder is not indexed")
			}
			h := repo.Handle{Type: repo.PackFile, Name: b.Pack.String()}
			store(t, f.be, h, flipped(load(t, f.be, h), int(b.Offset+b.Length/2)))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newPruneFixture(t, memory.New())
			f.forgetOld(t)
			tc.damage(t, f)
			before := allFiles(t, f.be)
			for _, dry := range []bool{true, false} {
				_, err := openLater(t, f.be).Prune(context.Background(), repo.PruneOptions{DryRun: dry, TempDir: t.TempDir()})
				if !errors.Is(err, repo.ErrInvalidManifest) || !strings.Contains(err.Error(), f.keep.ID) {
					t.Fatalf("prune (dry run %v): %v, want ErrInvalidManifest naming snapshot %s", dry, err, f.keep.ID)
				}
				var te *repo.SnapshotTreeError
				if errors.As(err, &te) != tc.wantTree || (tc.wantTree && te.Tree != f.sub) {
					t.Errorf("prune: %v; want a *SnapshotTreeError of tree %s: %v", err, f.sub.Short(), tc.wantTree)
				}
			}
			if after := allFiles(t, f.be); !slices.Equal(before, after) {
				t.Errorf("a stopped prune changed the repository:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// makeLeftover writes a pack that no index lists, as an interrupted
// backup leaves one, and returns its name.
func makeLeftover(t *testing.T, f *pruneFixture) string {
	t.Helper()
	indexes := names(t, f.be, repo.IndexFile)
	packs := names(t, f.be, repo.PackFile)
	saveBlob(t, f.r, random(9999, pruneBlobSize))
	flush(t, f.r)
	for _, name := range names(t, f.be, repo.IndexFile) {
		if !slices.Contains(indexes, name) {
			if err := f.be.Remove(context.Background(), repo.Handle{Type: repo.IndexFile, Name: name}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return onlyNewPack(t, f.be, packs).String()
}

// A pack that no index lists is deleted when it is older than the
// leftover age and kept when younger; both are reported with their bytes.
func TestPruneDeletesOnlyOldLeftovers(t *testing.T) {
	tests := []struct {
		name        string
		age         time.Duration
		leftoverAge time.Duration
		wantDeleted bool
	}{
		{name: "older than the default age", age: 3 * time.Hour, wantDeleted: true},
		{name: "younger than the default age", age: time.Hour},
		{name: "older than a set age", age: 20 * time.Minute, leftoverAge: 10 * time.Minute, wantDeleted: true},
		{name: "younger than a set age", age: 20 * time.Minute, leftoverAge: time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newPruneFixture(t, newLocal(t))
			name := makeLeftover(t, f)
			size, err := f.be.Stat(context.Background(), repo.Handle{Type: repo.PackFile, Name: name})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(f.be.Location(), string(repo.PackFile), name[:2], name)
			mtime := time.Now().Add(-tc.age)
			if err := os.Chtimes(path, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			opts := repo.PruneOptions{LeftoverAge: tc.leftoverAge, TempDir: t.TempDir(), MaxUnused: repo.UnusedLimit{Unlimited: true}}
			dry, err := openRepo(t, f.be).Prune(context.Background(), repo.PruneOptions{DryRun: true, LeftoverAge: opts.LeftoverAge, TempDir: opts.TempDir, MaxUnused: opts.MaxUnused})
			if err != nil {
				t.Fatal(err)
			}
			res, err := openRepo(t, f.be).Prune(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(path)
			for _, r := range []*repo.PruneResult{dry, res} {
				if tc.wantDeleted && (r.LeftoversDeleted != 1 || r.LeftoverBytesDeleted != size || r.LeftoversKept != 0 || r.BytesFreed != size) {
					t.Errorf("result %+v, want one leftover of %d bytes deleted and freed", r, size)
				}
				if !tc.wantDeleted && (r.LeftoversKept != 1 || r.LeftoverBytesKept != size || r.LeftoversDeleted != 0 || r.BytesFreed != 0) {
					t.Errorf("result %+v, want one leftover of %d bytes kept", r, size)
				}
			}
			if gone := errors.Is(statErr, os.ErrNotExist); gone != tc.wantDeleted {
				t.Errorf("leftover pack gone: %v, want %v", gone, tc.wantDeleted)
			}
			f.assertSound(t, !tc.wantDeleted)
		})
	}
}

// setPackAge sets the modification time of a pack of a local repository
// to age ago.
func setPackAge(t *testing.T, be repo.Backend, id repo.ID, age time.Duration) {
	t.Helper()
	name := id.String()
	mtime := time.Now().Add(-age)
	if err := os.Chtimes(filepath.Join(be.Location(), string(repo.PackFile), name[:2], name), mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// leasedLocal is a local folder whose locks are leases (a LockKeeper, as
// an object store's) instead of flocks: a lease may be broken as stale
// while its holder still runs, so prune cannot know from its own
// exclusive lock that no backup is writing. It tells packs' ages.
type leasedLocal struct {
	*leases
	timer repo.ObjectTimer
}

func (l leasedLocal) ModTime(ctx context.Context, h repo.Handle) (time.Time, error) {
	return l.timer.ModTime(ctx, h)
}

func newLeasedLocal(t *testing.T) repo.Backend {
	be := newLocal(t)
	return leasedLocal{leases: &leases{Backend: be, expired: map[string]bool{}}, timer: be.(repo.ObjectTimer)}
}

// Where locks are leases, a pack that prune would delete (wholly unused)
// or repack (partly unused) is deleted or repacked only when it is older
// than the leftover age; a younger one is kept, indexed, and counted as
// kept young with its bytes, by the dry run as by the real run.
func TestPruneDeletesOrRepacksOnlyPacksOlderThanTheLeftoverAge(t *testing.T) {
	tests := []struct {
		name         string
		pack         string // the fixture's pack whose age is set; the others are 3 hours old
		age          time.Duration
		wantKept     bool
		wantDeleted  int
		wantRepacked int
	}{
		{name: "wholly unused, younger than the age: kept", pack: "gone", age: time.Minute, wantKept: true, wantRepacked: 3},
		{name: "wholly unused, older than the age: deleted", pack: "gone", age: 3 * time.Hour, wantDeleted: 1, wantRepacked: 3},
		{name: "partly unused, younger than the age: kept, not repacked", pack: "mostly", age: time.Minute, wantKept: true,
			wantDeleted: 1, wantRepacked: 2},
		{name: "partly unused, older than the age: repacked", pack: "mostly", age: 3 * time.Hour, wantDeleted: 1, wantRepacked: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newPruneFixture(t, newLeasedLocal(t))
			f.forgetOld(t)
			for name, id := range f.packs {
				age := 3 * time.Hour
				if name == tc.pack {
					age = tc.age
				}
				setPackAge(t, f.be, id, age)
			}
			size := f.packSize(t, tc.pack)
			dry, err := openRepo(t, f.be).Prune(ctx, repo.PruneOptions{DryRun: true, TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			res, err := openRepo(t, f.be).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			wantYoung, wantYoungBytes := 0, int64(0)
			if tc.wantKept {
				wantYoung, wantYoungBytes = 1, size
			}
			for _, r := range []*repo.PruneResult{dry, res} {
				if r.PacksKeptYoung != wantYoung || r.BytesKeptYoung != wantYoungBytes || r.PacksDeleted != tc.wantDeleted || r.PacksRepacked != tc.wantRepacked {
					t.Errorf("%d packs (%d bytes) kept young, %d deleted, %d repacked; want %d (%d bytes), %d, %d",
						r.PacksKeptYoung, r.BytesKeptYoung, r.PacksDeleted, r.PacksRepacked, wantYoung, wantYoungBytes, tc.wantDeleted, tc.wantRepacked)
				}
			}
			if kept := slices.Contains(f.packsLeft(t), tc.pack); kept != tc.wantKept {
				t.Errorf("pack %s stays: %v, want %v", tc.pack, kept, tc.wantKept)
			}
			f.assertSound(t, false)
		})
	}
}

// A live backup has written and indexed a pack, but not yet saved the
// snapshot that uses it: where locks are leases, a prune that runs then
// (the backup's lease broken as stale) keeps the young pack, and the
// snapshot the backup then saves checks clean and restores.
func TestPruneKeepsALiveBackupsIndexedPack(t *testing.T) {
	ctx := context.Background()
	f := newPruneFixture(t, newLeasedLocal(t))
	packs := names(t, f.be, repo.PackFile)
	content := random(4242, pruneBlobSize)
	blob := saveBlob(t, f.r, content)
	flush(t, f.r) // the pack and an index file listing it: a backup's session ends so
	young := onlyNewPack(t, f.be, packs)
	res, err := openRepo(t, f.be).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir(), MaxUnused: repo.UnusedLimit{Unlimited: true}})
	if err != nil {
		t.Fatal(err)
	}
	if res.PacksDeleted != 0 || res.PacksKeptYoung != 1 {
		t.Errorf("prune beside a live backup deleted %d packs and kept %d young, want none deleted and its pack kept", res.PacksDeleted, res.PacksKeptYoung)
	}
	if _, err := f.be.Stat(ctx, repo.Handle{Type: repo.PackFile, Name: young.String()}); err != nil {
		t.Fatalf("the live backup's pack %s: %v", young.Short(), err)
	}
	// The backup goes on and saves its snapshot.
	node := repo.Node{Name: "late", Type: repo.NodeFile, Size: pruneBlobSize, Mode: 0o644, Content: []repo.ID{blob}}
	sub := saveTree(t, f.r, &repo.Tree{Nodes: []repo.Node{node}})
	root := saveTree(t, f.r, &repo.Tree{Nodes: []repo.Node{{Name: "data", Type: repo.NodeDir, Mode: 0o755, Subtree: &sub}}})
	snap := &repo.Snapshot{ID: forgetSnapID(0, 2), Time: f.keep.Time.Add(time.Hour), Hostname: "h", Paths: []string{"/data"}, Tree: root}
	if err := flush(t, f.r).SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	f.assertSound(t, false)
	if got := restoreFiles(t, f.be, snap)["late"]; !bytes.Equal(got, content) {
		t.Errorf("the live backup's file restores with %d bytes that differ from the %d saved", len(got), len(content))
	}
}

// Where locks are exact (a flock is alive exactly while its process
// holds it), the exclusive lock prune holds proves that no backup is
// writing: a pack seconds old that nothing uses is deleted, and a partly
// unused one repacked, whatever their age.
func TestPruneUnderExactLocksIgnoresPackAges(t *testing.T) {
	for _, be := range []struct {
		name string
		new  func(*testing.T) repo.Backend
	}{{"local", newLocal}, {"memory", func(*testing.T) repo.Backend { return memory.New() }}} {
		t.Run(be.name, func(t *testing.T) {
			f := newPruneFixture(t, be.new(t))
			f.forgetOld(t)
			res, err := openRepo(t, f.be).Prune(context.Background(), repo.PruneOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.PacksKeptYoung != 0 || res.PacksDeleted != 1 || res.PacksRepacked != 3 {
				t.Errorf("%d packs kept young, %d deleted, %d repacked; want none kept young, 1 deleted, 3 repacked",
					res.PacksKeptYoung, res.PacksDeleted, res.PacksRepacked)
			}
			f.assertSound(t, false)
		})
	}
}

// ageless is a memory backend with leases for locks that cannot tell when
// an object was stored (no repo.ObjectTimer), as storage without
// modification times.
type ageless struct {
	*leases
}

// On storage with leases for locks that cannot tell a pack's age, prune
// deletes and repacks nothing: every pack it would has a writer that may
// be live. It counts them as kept young.
func TestPruneKeepsPacksOfUnknownAge(t *testing.T) {
	f := newPruneFixture(t, ageless{&leases{Backend: memory.New(), expired: map[string]bool{}}})
	f.forgetOld(t)
	var want int64
	for _, name := range []string{"gone", "mostly", "little", "trees"} {
		want += f.packSize(t, name)
	}
	res, err := openLater(t, f.be).Prune(context.Background(), repo.PruneOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.PacksDeleted+res.PacksRepacked != 0 || res.PacksKeptYoung != 4 || res.BytesKeptYoung != want {
		t.Errorf("%d packs deleted, %d repacked, %d (%d bytes) kept young; want none, none and gone, mostly, little and trees (%d bytes)",
			res.PacksDeleted, res.PacksRepacked, res.PacksKeptYoung, res.BytesKeptYoung, want)
	}
	if left := f.packsLeft(t); !slices.Equal(left, packNames) {
		t.Errorf("packs left %v, want all of %v", left, packNames)
	}
	f.assertSound(t, false)
}

// Beside any other lock, prune is busy at once and changes nothing; a dry
// run takes no lock and goes ahead.
func TestPruneIsBusyBesideALock(t *testing.T) {
	for _, exclusive := range []bool{false, true} {
		t.Run(fmt.Sprintf("exclusive=%v", exclusive), func(t *testing.T) {
			ctx := context.Background()
			f := newPruneFixture(t, memory.New())
			f.forgetOld(t)
			lock, err := openRepo(t, f.be).Lock(ctx, exclusive, "backup")
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Unlock()
			before := allFiles(t, f.be)
			if _, err := openLater(t, f.be).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()}); !errors.Is(err, repo.ErrBusy) {
				t.Fatalf("prune beside a lock: %v, want ErrBusy", err)
			}
			res, err := openLater(t, f.be).Prune(ctx, repo.PruneOptions{DryRun: true, TempDir: t.TempDir()})
			if err != nil || res.PacksDeleted != 1 {
				t.Errorf("dry run beside a lock: %+v, %v; want the plan", res, err)
			}
			if after := allFiles(t, f.be); !slices.Equal(before, after) {
				t.Errorf("a busy prune changed the repository:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// forgetInterrupted starts forgetting snapshot old and dies after marking
// it: the mark stays, and so does the snapshot record.
func forgetInterrupted(t *testing.T, f *pruneFixture, mem *memory.Backend) {
	t.Helper()
	be := &crashing{Backend: mem}
	r := openLater(t, be)
	be.mu.Lock()
	be.at = be.n + 2 // the mark is write 1, the record's removal write 2
	be.mu.Unlock()
	if _, err := r.Forget(context.Background(), repo.ForgetOptions{Plan: forgetIDs(f.old.ID), GroupKey: byHost}); !errors.Is(err, errCrashed) {
		t.Fatalf("forget that dies: %v", err)
	}
	be.abandonLocks()
	if marks := names(t, mem, repo.ForgetFile); !slices.Equal(marks, []string{f.old.ID}) {
		t.Fatalf("marks %v after the interrupted forget, want %s", marks, f.old.ID)
	}
}

// A dry run writes nothing and reports what the real run then does, also
// for a forget it completes first: its data is garbage only once that
// forget is completed, which a dry run counts as done.
func TestPruneDryRunMatchesTheRealRun(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	f := newPruneFixture(t, mem)
	forgetInterrupted(t, f, mem)
	before := allFiles(t, mem)
	var phases []string
	// A repository opened without LoadIndex: prune streams the index and
	// leaves the in-memory one empty.
	unloaded, err := repo.Open(ctx, mem, repo.OpenOptions{Password: pw(password), Now: later})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unloaded.Close)
	dry, err := unloaded.Prune(ctx, repo.PruneOptions{DryRun: true, TempDir: t.TempDir(), Progress: func(p repo.PruneProgress) {
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n := unloaded.Index().Len(); n != 0 {
		t.Errorf("a prune filled the in-memory index with %d blobs", n)
	}
	if after := allFiles(t, mem); !slices.Equal(before, after) {
		t.Fatalf("a dry run changed the repository:\nbefore %v\nafter  %v", before, after)
	}
	if slices.Contains(phases, "repack") || slices.Contains(phases, "delete") || !slices.Contains(phases, "index") || !slices.Contains(phases, "walk") {
		t.Errorf("a dry run went through phases %v, want index and walk but no repack or delete", phases)
	}
	res, err := openLater(t, mem).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.ForgetsCompleted, []string{f.old.ID}) || res.PacksDeleted != 1 || res.PacksRepacked != 3 {
		t.Errorf("real run %+v: want old's forget completed, one pack deleted and three repacked", res)
	}
	if dry.PacksWritten != 0 || dry.BytesWritten != 0 || res.PacksWritten == 0 || res.BytesWritten == 0 {
		t.Errorf("written: dry run %d packs, %d bytes; real run %d, %d", dry.PacksWritten, dry.BytesWritten, res.PacksWritten, res.BytesWritten)
	}
	real := *res
	real.PacksWritten, real.BytesWritten = 0, 0
	if fmt.Sprintf("%+v", *dry) != fmt.Sprintf("%+v", real) {
		t.Errorf("dry run and real run differ:\ndry  %+v\nreal %+v", *dry, real)
	}
	f.assertSound(t, false)
}

// A prune that dies at any of its writes leaves a repository that check
// finds clean (packs no index lists are only a warning) and whose
// remaining snapshot restores; the next prune completes it.
func TestPruneCompletesAfterACrashAtEveryWrite(t *testing.T) {
	ctx := context.Background()
	// An uninterrupted prune: how many writes it makes.
	counter := &crashing{Backend: memory.New()}
	f := newPruneFixture(t, counter)
	f.forgetOld(t)
	counter.mu.Lock()
	made := counter.n
	counter.mu.Unlock()
	if _, err := openLater(t, counter).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	counter.mu.Lock()
	writes := counter.n - made
	counter.mu.Unlock()
	if writes < 5 {
		t.Fatalf("an uninterrupted prune made %d writes, want at least a pack, its index, a new index and removals", writes)
	}
	for at := 1; at <= writes; at++ {
		t.Run(fmt.Sprintf("dies at write %d", at), func(t *testing.T) {
			mem := memory.New()
			f := newPruneFixture(t, mem)
			f.forgetOld(t)
			be := &crashing{Backend: mem}
			r := openLater(t, be)
			be.mu.Lock()
			be.at = be.n + at
			be.mu.Unlock()
			if _, err := r.Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()}); !errors.Is(err, errCrashed) {
				t.Fatalf("prune that dies: %v, want it to fail", err)
			}
			be.abandonLocks()
			f.assertSound(t, true)
			if _, err := openLater(t, mem).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()}); err != nil {
				t.Fatalf("the next prune: %v", err)
			}
			f.assertSound(t, true)
			// What stays is what an uninterrupted prune leaves, and packs
			// that no index lists while they are young.
			res, err := openLater(t, mem).Prune(ctx, repo.PruneOptions{DryRun: true, TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.BlobsUnused != 0 || res.PacksDeleted+res.PacksRepacked != 0 {
				t.Errorf("after the next prune, unused blobs are still indexed: %+v", res)
			}
			for _, name := range []string{"gone", "mostly", "little", "trees"} {
				if slices.Contains(f.packsLeft(t), name) && res.LeftoversKept == 0 {
					t.Errorf("pack %s stays, yet no leftover is reported: %+v", name, res)
				}
			}
		})
	}
}

// ParseUnusedLimit reads restic's --max-unused forms and refuses others
// with one line that names what is allowed.
func TestParseUnusedLimit(t *testing.T) {
	tests := []struct {
		in      string
		want    repo.UnusedLimit
		wantErr bool
	}{
		{in: "10%", want: repo.UnusedLimit{Fraction: 0.10}},
		{in: "0.5%", want: repo.UnusedLimit{Fraction: 0.005}},
		{in: "0%", want: repo.UnusedLimit{}},
		{in: "0", want: repo.UnusedLimit{}},
		{in: "5G", want: repo.UnusedLimit{Bytes: 5 << 30}},
		{in: "500M", want: repo.UnusedLimit{Bytes: 500 << 20}},
		{in: "2k", want: repo.UnusedLimit{Bytes: 2 << 10}},
		{in: "1TiB", want: repo.UnusedLimit{Bytes: 1 << 40}},
		{in: "123", want: repo.UnusedLimit{Bytes: 123}},
		{in: "unlimited", want: repo.UnusedLimit{Unlimited: true}},
		{in: "100%", wantErr: true},
		{in: "-1%", wantErr: true},
		{in: "-5", wantErr: true},
		{in: "ten", wantErr: true},
		{in: "", wantErr: true},
		{in: "5X", wantErr: true},
		{in: "99999999999T", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := repo.ParseUnusedLimit(tc.in)
			if tc.wantErr {
				if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "unlimited") {
					t.Errorf("ParseUnusedLimit(%q) = %+v, %v; want a one-line error naming the forms allowed", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseUnusedLimit(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if again, err := repo.ParseUnusedLimit(got.String()); err != nil || again != got {
				t.Errorf("%+v prints as %q, which parses as %+v, %v", got, got.String(), again, err)
			}
		})
	}
}

// A write session never writes an index file of more than 65,536 blobs,
// however many blobs one pack holds: prune decodes one index file at a
// time, so their size bounds its memory.
func TestIndexFilesAreCapped(t *testing.T) {
	ctx := context.Background()
	const blobs, limit = 70_000, 1 << 16
	be := memory.New()
	r := initRepo(t, be)
	w := writer(t, r)
	for i := range blobs {
		data := fmt.Appendf(nil, "tiny blob %d", i)
		if _, err := w.SaveBlob(ctx, repo.DataBlob, r.BlobID(data), data); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, r) // the packs are small: all 70,000 blobs wait for this flush
	total := 0
	files := names(t, be, repo.IndexFile)
	for _, name := range files {
		got, _, err := r.ReadIndexFile(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > limit {
			t.Errorf("index file %s lists %d blobs, more than %d", name, len(got), limit)
		}
		total += len(got)
	}
	if total != blobs || len(files) != 2 {
		t.Errorf("%d index files list %d blobs, want 2 listing %d", len(files), total, blobs)
	}
}

// A used blob stored in two packs keeps one copy: the other counts as
// unused, and prune frees it like any unused blob.
func TestPruneKeepsOneCopyOfADuplicatedBlob(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	f := newPruneFixture(t, mem)
	// A repository value that knows no index stores a blob of keep again.
	again, err := repo.Open(ctx, mem, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Close)
	before := names(t, mem, repo.PackFile)
	saveBlob(t, again, f.files["used-keep-0"])
	flush(t, again)
	f.packs["dup"] = onlyNewPack(t, mem, before)

	res, err := openLater(t, mem).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.BlobsUnused == 0 || res.PacksDeleted+res.PacksRepacked == 0 {
		t.Errorf("prune %+v: want the extra copy unused and its pack, or the original's, deleted or repacked", res)
	}
	f.assertSound(t, false)
	after, err := openLater(t, mem).Prune(ctx, repo.PruneOptions{DryRun: true, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if after.BlobsUnused != 0 || after.BlobsUsed != res.BlobsUsed {
		t.Errorf("after prune: %d blobs used, %d unused; want %d used and none unused", after.BlobsUsed, after.BlobsUnused, res.BlobsUsed)
	}
}

// A used blob has two copies, the last blob of two packs. When the copy
// in the pack that sorts first runs past its pack's end (the pack was cut
// short), prune keeps the other copy, repacks the cut pack's used blobs,
// and leaves a repository that checks clean and restores every file.
// When every copy runs past its pack's end, prune stops naming the blob
// and changes nothing.
func TestPruneKeepsOnlyACopyWithinItsPack(t *testing.T) {
	tests := []struct {
		name    string
		cutBoth bool
	}{
		{name: "the first copy cut short: the other is kept"},
		{name: "every copy cut short: prune stops", cutBoth: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			oneCore(t)
			mem := memory.New()
			r := initRepo(t, mem)
			// A repository value that knows no index stores the blob again.
			other, err := repo.Open(ctx, mem, repo.OpenOptions{Password: pw(password)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(other.Close)
			files := map[string][]byte{}
			var nodes []repo.Node
			file := func(w *repo.Repository, name string, seed uint64) repo.ID {
				data := random(seed, pruneBlobSize)
				id := saveBlob(t, w, data)
				files[name] = data
				nodes = append(nodes, repo.Node{Name: name, Type: repo.NodeFile, Size: pruneBlobSize, Mode: 0o644, Content: []repo.ID{id}})
				return id
			}
			before := names(t, mem, repo.PackFile)
			file(r, "a-0", 1)
			file(r, "a-1", 2)
			dup := file(r, "x", 3)
			flush(t, r)
			first := onlyNewPack(t, mem, before)
			before = names(t, mem, repo.PackFile)
			file(other, "b-0", 4)
			file(other, "b-1", 5)
			saveBlob(t, other, files["x"])
			flush(t, other)
			second := onlyNewPack(t, mem, before)
			slices.SortFunc(nodes, func(a, b repo.Node) int { return strings.Compare(a.Name, b.Name) })
			root := saveTree(t, r, &repo.Tree{Nodes: nodes})
			snap := &repo.Snapshot{ID: forgetSnapID(0, 0), Time: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), Hostname: "h", Paths: []string{"/data"}, Tree: root}
			if err := flush(t, r).SaveSnapshot(ctx, snap); err != nil {
				t.Fatal(err)
			}
			cut, whole := first, second
			if bytes.Compare(second[:], first[:]) < 0 {
				cut, whole = second, first
			}
			victims := []repo.ID{cut}
			if tc.cutBoth {
				victims = append(victims, whole)
			}
			for _, pack := range victims {
				h := repo.Handle{Type: repo.PackFile, Name: pack.String()}
				data := load(t, mem, h)
				blobs, err := r.ReadPackHeader(ctx, pack, int64(len(data)))
				if err != nil {
					t.Fatal(err)
				}
				if last := blobs[len(blobs)-1]; last.ID != dup {
					t.Fatalf("pack %s ends with blob %s, want the duplicated %s", pack.Short(), last.ID.Short(), dup.Short())
				}
				// Storage damage: the pack cut 8 bytes (a trailer's room)
				// into the copy, so that the blobs before it stay whole.
				store(t, mem, h, data[:blobs[len(blobs)-1].Offset+8])
			}
			unchanged := allFiles(t, mem)

			res, err := openLater(t, mem).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()})
			if tc.cutBoth {
				if err == nil || !strings.Contains(err.Error(), dup.Short()) {
					t.Fatalf("prune with every copy of blob %s cut short: %v, want an error naming it", dup.Short(), err)
				}
				if after := allFiles(t, mem); !slices.Equal(unchanged, after) {
					t.Errorf("a stopped prune changed the repository:\nbefore %v\nafter  %v", unchanged, after)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			packs := names(t, mem, repo.PackFile)
			if slices.Contains(packs, cut.String()) || !slices.Contains(packs, whole.String()) || res.PacksRepacked != 1 {
				t.Errorf("prune %+v: want the cut pack %s repacked and gone, the whole %s kept", res, cut.Short(), whole.Short())
			}
			rep, err := openRepo(t, mem).Check(ctx, repo.CheckOptions{ReadDataFraction: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() || rep.UnindexedPacks != 0 {
				t.Errorf("check after prune: %s (%d packs no index lists)", problemList(rep), rep.UnindexedPacks)
			}
			got := restoreFiles(t, mem, snap)
			for name, want := range files {
				if !bytes.Equal(got[name], want) {
					t.Errorf("file %s restores with %d bytes that differ from the %d saved", name, len(got[name]), len(want))
				}
			}
		})
	}
}

// Temporary files of killed writes are removed when older than the
// leftover age and kept when younger; a dry run counts them and removes
// nothing.
func TestPruneRemovesOldTemporaryFiles(t *testing.T) {
	ctx := context.Background()
	f := newPruneFixture(t, newLocal(t))
	tmp := filepath.Join(f.be.Location(), "tmp")
	for name, age := range map[string]time.Duration{"0123abcd": 3 * time.Hour, "4567ef01": time.Minute} {
		path := filepath.Join(tmp, name)
		if err := os.WriteFile(path, make([]byte, 100), 0o600); err != nil {
			t.Fatal(err)
		}
		mtime := time.Now().Add(-age)
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	for _, dry := range []bool{true, false} {
		res, err := openRepo(t, f.be).Prune(ctx, repo.PruneOptions{DryRun: dry, TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if res.TempFilesDeleted != 1 || res.TempBytesDeleted != 100 || res.TempFilesKept != 1 {
			t.Errorf("dry run %v: %d temporary files (%d bytes) deleted and %d kept, want 1 (100) and 1",
				dry, res.TempFilesDeleted, res.TempBytesDeleted, res.TempFilesKept)
		}
		_, oldErr := os.Stat(filepath.Join(tmp, "0123abcd"))
		_, youngErr := os.Stat(filepath.Join(tmp, "4567ef01"))
		if errors.Is(oldErr, os.ErrNotExist) != !dry || youngErr != nil {
			t.Errorf("dry run %v: old file gone: %v, young file: %v", dry, oldErr, youngErr)
		}
	}
}

// A file in the temporary folder whose name nightjar never gives (an NFS
// ".nfs..." file, an editor's backup) is counted as foreign and left
// alone, however old, and prune succeeds; old temporary files of its own
// beside it are still removed.
func TestPruneLeavesForeignTemporaryFilesAlone(t *testing.T) {
	ctx := context.Background()
	f := newPruneFixture(t, newLocal(t))
	f.forgetOld(t)
	tmp := filepath.Join(f.be.Location(), "tmp")
	foreign := []string{".nfs000000000123", "notes~"}
	for _, name := range append([]string{"0123abcd"}, foreign...) {
		path := filepath.Join(tmp, name)
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		mtime := time.Now().Add(-3 * time.Hour)
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	for _, dry := range []bool{true, false} {
		res, err := openLater(t, f.be).Prune(ctx, repo.PruneOptions{DryRun: dry, TempDir: t.TempDir()})
		if err != nil {
			t.Fatalf("prune (dry run %v) beside foreign files in tmp/: %v", dry, err)
		}
		if res.TempFilesForeign != len(foreign) || res.TempFilesDeleted != 1 {
			t.Errorf("dry run %v: %d foreign temporary files and %d deleted, want %d and 1", dry, res.TempFilesForeign, res.TempFilesDeleted, len(foreign))
		}
		for _, name := range foreign {
			if _, err := os.Stat(filepath.Join(tmp, name)); err != nil {
				t.Errorf("dry run %v: foreign file %s: %v", dry, name, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "0123abcd")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old temporary file 0123abcd after prune: %v, want it removed", err)
	}
	f.assertSound(t, false)
}

// cancelling is a memory backend that cancels a context at its nth write
// (Save or Remove of anything but a lock) and fails that write, as a
// prune stopped by its caller (a signal, a shutdown) sees it.
type cancelling struct {
	*memory.Backend
	mu     sync.Mutex
	at, n  int
	cancel context.CancelFunc
}

func (c *cancelling) write(h repo.Handle) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.Type == repo.LockFile {
		return nil
	}
	if c.n++; c.n == c.at {
		c.cancel()
		return context.Canceled
	}
	return nil
}

func (c *cancelling) Save(ctx context.Context, h repo.Handle, data []byte) error {
	if err := c.write(h); err != nil {
		return err
	}
	return c.Backend.Save(ctx, h, data)
}

func (c *cancelling) Remove(ctx context.Context, h repo.Handle) error {
	if err := c.write(h); err != nil {
		return err
	}
	return c.Backend.Remove(ctx, h)
}

// A prune cancelled at any of its writes returns the cancellation,
// releases its lock, and leaves a sound repository that the next prune
// completes.
func TestPruneCancelledAtEveryWrite(t *testing.T) {
	// An uninterrupted prune: how many writes it makes.
	counter := &cancelling{Backend: memory.New(), cancel: func() {}}
	f := newPruneFixture(t, counter)
	f.forgetOld(t)
	counter.mu.Lock()
	made := counter.n
	counter.mu.Unlock()
	if _, err := openLater(t, counter).Prune(context.Background(), repo.PruneOptions{TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	counter.mu.Lock()
	writes := counter.n - made
	counter.mu.Unlock()
	for at := 1; at <= writes; at++ {
		t.Run(fmt.Sprintf("cancelled at write %d", at), func(t *testing.T) {
			mem := memory.New()
			f := newPruneFixture(t, mem)
			f.forgetOld(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			be := &cancelling{Backend: mem, cancel: cancel}
			r := openLater(t, be)
			be.mu.Lock()
			be.at = be.n + at
			be.mu.Unlock()
			if _, err := r.Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()}); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled prune: %v, want context.Canceled", err)
			}
			if locks := names(t, mem, repo.LockFile); len(locks) != 0 {
				t.Errorf("a cancelled prune left locks %v", locks)
			}
			f.assertSound(t, true)
			if _, err := openLater(t, mem).Prune(context.Background(), repo.PruneOptions{TempDir: t.TempDir()}); err != nil {
				t.Fatalf("the next prune: %v", err)
			}
			f.assertSound(t, true)
			res, err := openLater(t, mem).Prune(context.Background(), repo.PruneOptions{DryRun: true, TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.BlobsUnused != 0 || res.PacksDeleted+res.PacksRepacked != 0 {
				t.Errorf("after the next prune, unused blobs are still indexed: %+v", res)
			}
		})
	}
}

// A damaged index file stops prune (and its dry run) with ErrIntegrity,
// naming repair index, before anything is written: which packs hold what
// is then unknown.
func TestPruneStopsOnADamagedIndexFile(t *testing.T) {
	f := newPruneFixture(t, memory.New())
	f.forgetOld(t)
	files := names(t, f.be, repo.IndexFile)
	slices.Sort(files)
	h := repo.Handle{Type: repo.IndexFile, Name: files[len(files)/2]}
	data := load(t, f.be, h)
	store(t, f.be, h, flipped(data, len(data)-3))
	before := allFiles(t, f.be)
	for _, dry := range []bool{true, false} {
		r, err := repo.Open(context.Background(), f.be, repo.OpenOptions{Password: pw(password)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		_, err = r.Prune(context.Background(), repo.PruneOptions{DryRun: dry, TempDir: t.TempDir()})
		if !errors.Is(err, repo.ErrIntegrity) || errors.Is(err, repo.ErrInvalidManifest) || !strings.Contains(err.Error(), "run nightjar repair index") {
			t.Errorf("prune (dry run %v) with a damaged index file: %v, want ErrIntegrity naming repair index", dry, err)
		}
	}
	if after := allFiles(t, f.be); !slices.Equal(before, after) {
		t.Errorf("a stopped prune changed the repository:\nbefore %v\nafter  %v", before, after)
	}
}

// A repack longer than one session's share of blobs goes on in further
// sessions without losing or repeating a blob, whatever the boundary.
func TestPruneRepacksAcrossSessions(t *testing.T) {
	for _, perSession := range []int{1, 2, 3, 7} {
		t.Run(fmt.Sprintf("%d blobs a session", perSession), func(t *testing.T) {
			t.Cleanup(repo.SetRepackSessionBlobs(perSession))
			f := newPruneFixture(t, memory.New())
			f.forgetOld(t)
			res, err := openLater(t, f.be).Prune(context.Background(), repo.PruneOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			// mostly 1, little 3 and the 2 trees of keep.
			if res.BlobsCopied != 6 || res.PacksWritten < int((res.BlobsCopied+int64(perSession)-1)/int64(perSession)) {
				t.Errorf("copied %d blobs into %d packs, want 6 in at least one pack a session of %d", res.BlobsCopied, res.PacksWritten, perSession)
			}
			f.assertSound(t, false)
		})
	}
}

// sealedBlobsIn returns the sealed bytes of every blob of the packs named,
// by blob ID.
func sealedBlobsIn(t *testing.T, be repo.Backend, r *repo.Repository, packs []repo.ID) map[repo.ID][]byte {
	t.Helper()
	out := map[repo.ID][]byte{}
	for _, id := range packs {
		data := load(t, be, repo.Handle{Type: repo.PackFile, Name: id.String()})
		blobs, err := r.ReadPackHeader(context.Background(), id, int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blobs {
			out[b.ID] = data[b.Offset : b.Offset+b.Length]
		}
	}
	return out
}

// packIDs returns the IDs of every pack in be.
func packIDs(t *testing.T, be repo.Backend) []repo.ID {
	t.Helper()
	var ids []repo.ID
	for _, name := range names(t, be, repo.PackFile) {
		id, err := repo.ParseID(name)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// Repacking copies each used blob's sealed bytes as they are: every blob
// of keep that was in a repacked pack is in a new pack with the same
// sealed bytes (no new nonce, no new compression), and the repository
// checks clean with read-data and restores bit-identical.
func TestPruneCopiesSealedBytesAsTheyAre(t *testing.T) {
	ctx := context.Background()
	f := newPruneFixture(t, memory.New())
	f.forgetOld(t)
	before := sealedBlobsIn(t, f.be, f.r, []repo.ID{f.packs["mostly"], f.packs["little"], f.packs["trees"]})
	res, err := openLater(t, f.be).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.PacksRepacked != 3 || res.BlobsCopied != 6 {
		t.Fatalf("repacked %d packs, copying %d blobs; want mostly, little and trees, 6 blobs", res.PacksRepacked, res.BlobsCopied)
	}
	after := sealedBlobsIn(t, f.be, f.r, packIDs(t, f.be))
	copied := 0
	for id, sealed := range before {
		got, ok := after[id]
		if !ok {
			continue // an unused blob, gone with its pack
		}
		copied++
		if !bytes.Equal(got, sealed) {
			t.Errorf("blob %s: the copy's %d sealed bytes differ from the original's %d", id.Short(), len(got), len(sealed))
		}
	}
	if copied != 6 {
		t.Errorf("%d blobs of the repacked packs are left, want the 6 copied", copied)
	}
	f.assertSound(t, false)
}

// A blob to copy that fails authentication stops prune with ErrIntegrity
// naming the pack and the blob, before anything is deleted, and the
// damaged blob is copied into no pack. Damage to an unused blob of a
// repacked pack stops nothing: that blob is not copied, and goes with its
// pack.
func TestPruneStopsOnADamagedBlobToCopy(t *testing.T) {
	tests := []struct {
		name string
		used bool // damage a blob that keep uses, else one only old used
	}{
		{"a used blob", true},
		{"an unused blob", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newPruneFixture(t, memory.New())
			f.forgetOld(t)
			pack := f.packs["little"]
			h := repo.Handle{Type: repo.PackFile, Name: pack.String()}
			data := load(t, f.be, h)
			blobs, err := f.r.ReadPackHeader(ctx, pack, int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			keeps := map[repo.ID]bool{}
			for _, content := range f.files {
				keeps[f.r.BlobID(content)] = true
			}
			var victim repo.PackedBlob
			for _, b := range blobs {
				if keeps[b.ID] == tc.used {
					victim = b
				}
			}
			if victim.Length == 0 {
				t.Fatal("pack little has no blob of the kind to damage")
			}
			store(t, f.be, h, flipped(data, int(victim.Offset+victim.Length/2)))
			before := allFiles(t, f.be)

			res, err := openLater(t, f.be).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()})
			if !tc.used {
				if err != nil {
					t.Fatalf("prune with a damaged unused blob: %v", err)
				}
				if slices.Contains(f.packsLeft(t), "little") || res.PacksRepacked != 3 {
					t.Errorf("pack little stays (%d packs repacked), want it repacked and gone", res.PacksRepacked)
				}
				f.assertSound(t, false)
				return
			}
			if !errors.Is(err, repo.ErrIntegrity) || !strings.Contains(err.Error(), pack.Short()) || !strings.Contains(err.Error(), victim.ID.Short()) {
				t.Fatalf("prune with a damaged used blob: %v; want ErrIntegrity naming pack %s and blob %s", err, pack.Short(), victim.ID.Short())
			}
			after := allFiles(t, f.be)
			for _, name := range before {
				if !slices.Contains(after, name) {
					t.Errorf("a stopped prune deleted %s", name)
				}
			}
			if locks := names(t, f.be, repo.LockFile); len(locks) != 0 {
				t.Errorf("a stopped prune left locks %v", locks)
			}
			for _, name := range after {
				if !slices.Contains(before, name) && !strings.HasPrefix(name, string(repo.PackFile)+"/") && !strings.HasPrefix(name, string(repo.IndexFile)+"/") {
					t.Errorf("a stopped prune wrote %s", name)
				}
			}
			var written []repo.ID
			for _, id := range packIDs(t, f.be) {
				if !slices.Contains(before, string(repo.PackFile)+"/"+id.String()) {
					written = append(written, id)
				}
			}
			if _, ok := sealedBlobsIn(t, f.be, f.r, written)[victim.ID]; ok {
				t.Errorf("the damaged blob %s was copied into a new pack", victim.ID.Short())
			}
		})
	}
}

// loadRecorder is a memory backend that records the ranges read of each
// pack.
type loadRecorder struct {
	*memory.Backend
	mu    sync.Mutex
	loads map[string][][2]int64 // pack name -> {offset, length} of each Load
}

func (l *loadRecorder) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.PackFile {
		l.mu.Lock()
		l.loads[h.Name] = append(l.loads[h.Name], [2]int64{offset, length})
		l.mu.Unlock()
	}
	return l.Backend.Load(ctx, h, offset, length)
}

// Repacking reads the used blobs of a pack in one ranged read of the run
// they make, not the whole pack: pack mostly holds keep's blob first and
// three of old after it, pack little three of keep and then one of old.
// Pack trees holds keep's folder, old's folder, keep's root and old's
// root: the run of keep's trees reads through old's folder (a small gap),
// and the walk reads keep's trees one by one besides.
func TestPruneReadsOnlyTheRunOfBlobsToCopy(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	f := newPruneFixture(t, mem)
	f.forgetOld(t)
	keeps := map[repo.ID]bool{f.sub: true, f.keep.Tree: true}
	for _, content := range f.files {
		keeps[f.r.BlobID(content)] = true
	}
	usedAt := map[string][]bool{ // pack -> whether each of its blobs is used, in order
		"mostly": {true, false, false, false},
		"little": {true, true, true, false},
		"trees":  {true, false, true, false},
	}
	want := map[string][2]int64{}
	for name, used := range usedAt {
		data := load(t, mem, repo.Handle{Type: repo.PackFile, Name: f.packs[name].String()})
		blobs, err := f.r.ReadPackHeader(ctx, f.packs[name], int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if len(blobs) != len(used) {
			t.Fatalf("pack %s holds %d blobs, want %d", name, len(blobs), len(used))
		}
		var end int64
		for i, b := range blobs {
			if keeps[b.ID] != used[i] {
				t.Fatalf("pack %s: blob %d is used: %v, against the fixture's order", name, i, keeps[b.ID])
			}
			if used[i] {
				end = int64(b.Offset + b.Length)
			}
		}
		want[name] = [2]int64{0, end}
	}
	rec := &loadRecorder{Backend: mem, loads: map[string][][2]int64{}}
	if _, err := openLater(t, rec).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	for name, span := range want {
		got := rec.loads[f.packs[name].String()]
		if name == "trees" {
			// The walk's reads of single trees, and one read of the run;
			// none reaches old's root at the end.
			runs := slices.DeleteFunc(slices.Clone(got), func(l [2]int64) bool { return l != span })
			beyond := slices.ContainsFunc(got, func(l [2]int64) bool { return l[0]+l[1] > span[1] })
			if len(runs) != 1 || beyond {
				t.Errorf("pack trees read as %v (offset, length), want the run %v once and nothing beyond it", got, span)
			}
			continue
		}
		if len(got) != 1 || got[0] != span {
			t.Errorf("pack %s read as %v (offset, length), want once, %v: its used blobs only", name, got, span)
		}
	}
	f.assertSound(t, false)
}
