package jobs

import (
	"context"
	"errors"
	"fmt"
	"github.com/nightjar-backup/nightjar/repo/backend/lease"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/restore"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// drillWorld is a repository in a local folder and job j backing up two
// sources into it, with the drills' temporary folders in a folder of
// their own, so that a test can see that none is left.
type drillWorld struct {
	repoDir string
	exec    *Executor
	job     pass.JobDef
	sources []string
	drills  string
	fs      *watchFS
}

func newDrillWorld(t *testing.T) *drillWorld {
	t.Helper()
	dir := t.TempDir()
	w := &drillWorld{repoDir: filepath.Join(dir, "repo"), drills: filepath.Join(dir, "drills"), fs: &watchFS{}}
	be, err := local.Create(w.repoDir)
	if err != nil {
		t.Fatal(err)
	}
	repotest.New(t, be)
	for _, name := range []string{"one", "two"} {
		src := filepath.Join(dir, name)
		writeFile(t, filepath.Join(src, "small.txt"), []byte("content of "+name))
		big := make([]byte, 300<<10) // several chunks
		for i := range big {
			big[i] = byte(i*7 + len(name))
		}
		writeFile(t, filepath.Join(src, "sub", "big.bin"), big)
		// A folder the owner may not write: the drill must still remove it.
		if err := os.Chmod(filepath.Join(src, "sub"), 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(filepath.Join(src, "sub"), 0o700) })
		w.sources = append(w.sources, src)
	}
	if err := os.Mkdir(w.drills, 0o755); err != nil {
		t.Fatal(err)
	}
	w.job = pass.JobDef{Name: "j", Repository: "r", Sources: w.sources}
	w.exec = &Executor{
		Open: func(ctx context.Context, _ string) (*repo.Repository, error) { return w.open(ctx) },
		Sources: func(string) ([]SourceSpec, []string) {
			var specs []SourceSpec
			for _, s := range w.job.Sources {
				specs = append(specs, SourceSpec{Path: s})
			}
			return specs, nil
		},
		Drill: DrillOptions{TempDir: w.drills, FS: w.fs},
	}
	return w
}

// open opens the repository, as the scheduler's opener does for each run
// (a run closes the repository it is given).
func (w *drillWorld) open(ctx context.Context) (*repo.Repository, error) {
	be, err := local.Open(w.repoDir)
	if err != nil {
		return nil, err
	}
	return repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
}

// repo opens the repository with its index for the test, until it ends.
func (w *drillWorld) repo(t *testing.T) *repo.Repository {
	t.Helper()
	r, err := w.open(context.Background())
	if err == nil {
		err = r.LoadIndex(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// backup runs a backup run and returns the IDs of its snapshots.
func (w *drillWorld) backup(t *testing.T, run int64) []string {
	t.Helper()
	res, err := w.exec.Execute(context.Background(), w.job, pass.Run{ID: run, Kind: pass.KindBackup}, func(pass.Progress) {})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range res.Snapshots {
		ids = append(ids, s.SnapshotID)
	}
	return ids
}

func (w *drillWorld) drill(ctx context.Context, progress func(pass.Progress)) (pass.Result, error) {
	return w.exec.Execute(ctx, w.job, pass.Run{ID: 100, Kind: pass.KindDrill}, progress)
}

// noFolderLeft fails the test when a drill left anything behind, or when
// no drill folder was made at all.
func (w *drillWorld) noFolderLeft(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(w.drills)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		t.Errorf("the drill left %s in %s", entries[0].Name(), w.drills)
	}
	folders := w.fs.folders()
	if len(folders) == 0 {
		t.Error("the restore wrote into no drill folder")
	}
	for _, f := range folders {
		if filepath.Dir(f.path) != w.drills || !strings.HasPrefix(filepath.Base(f.path), "nightjar-drill-") || f.perm != 0o700 {
			t.Errorf("the drill restored into %s (mode %o), want a fresh nightjar-drill- folder of mode 700 in %s", f.path, f.perm, w.drills)
		}
	}
}

// watchFS is the OS for restores, which notes the drill folders files are
// created in (and their mode then) and can change a file's content on its
// way to the disk or hold the first file's creation.
type watchFS struct {
	restore.OS
	mu      sync.Mutex
	seen    []drillFolder
	corrupt string        // a file's name: its first byte is written wrong
	entered chan struct{} // closed when the first file is being created, if hold is set
	hold    chan struct{} // the first creation waits for it to be closed
}

type drillFolder struct {
	path string
	perm fs.FileMode
}

func (f *watchFS) CreateExclusive(target, name string) (restore.File, error) {
	f.mu.Lock()
	root := filepath.Join(target, name)
	for filepath.Base(filepath.Dir(root)) != "drills" && root != "/" {
		root = filepath.Dir(root)
	}
	if !slices.ContainsFunc(f.seen, func(d drillFolder) bool { return d.path == root }) {
		fi, err := os.Stat(root)
		if err == nil {
			f.seen = append(f.seen, drillFolder{path: root, perm: fi.Mode().Perm()})
		}
	}
	hold, entered := f.hold, f.entered
	f.hold = nil
	f.mu.Unlock()
	if hold != nil {
		close(entered)
		<-hold
	}
	file, err := f.OS.CreateExclusive(target, name)
	if err != nil || f.corrupt == "" {
		return file, err
	}
	return &corruptingFile{File: file}, nil
}

func (f *watchFS) folders() []drillFolder {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

// corruptingFile writes the first byte of the file wrong, as a failing
// disk might.
type corruptingFile struct{ restore.File }

func (c *corruptingFile) WriteAt(p []byte, off int64) (int, error) {
	if off == 0 && len(p) > 0 {
		q := slices.Clone(p)
		q[0] ^= 0xff
		return c.File.WriteAt(q, off)
	}
	return c.File.WriteAt(p, off)
}

// A drill restores the newest snapshot of each of the job's sources and
// reads every file back: it succeeds with its counters, says in its
// progress which snapshots it drills, and leaves no folder behind (also
// not one of mode 500 in the snapshot).
func TestDrillRestoresTheNewestSnapshotOfEachSource(t *testing.T) {
	w := newDrillWorld(t)
	w.backup(t, 1)
	writeFile(t, filepath.Join(w.sources[0], "small.txt"), []byte("changed"))
	newest := w.backup(t, 2)
	var progress []string
	res, err := w.drill(context.Background(), func(p pass.Progress) { progress = append(progress, p.Current) })
	if err != nil {
		t.Fatalf("drill: %v", err)
	}
	want := map[string]int64{CounterSnapshotsChecked: 2, CounterFilesChecked: 4,
		CounterBytesChecked: int64(2*(300<<10) + len("changed") + len("content of two")), CounterMismatches: 0}
	for name, n := range want {
		if res.Figures.Counters[name] != n {
			t.Errorf("counter %s = %d, want %d (all: %v)", name, res.Figures.Counters[name], n, res.Figures.Counters)
		}
	}
	if len(res.Figures.Skipped) != 0 {
		t.Errorf("skipped %+v, want nothing", res.Figures.Skipped)
	}
	wantProgress := []string{"drill snapshot " + newest[0] + " of source " + w.sources[0], "drill snapshot " + newest[1] + " of source " + w.sources[1]}
	if !slices.Equal(progress, wantProgress) {
		t.Errorf("progress %q, want %q", progress, wantProgress)
	}
	w.noFolderLeft(t)
}

// A drill checks only what the job made: with no snapshot of its own (a
// command-line backup of its source and another job's snapshot do not
// count) it fails with NO_SNAPSHOT; with one source backed up and a new
// one not yet, the new one is a skipped object.
func TestDrillWithoutASnapshot(t *testing.T) {
	ctx := context.Background()
	w := newDrillWorld(t)
	r := w.repo(t)
	if _, err := backup.Backup(ctx, r, backup.Options{Paths: []string{w.sources[0]}, Tags: []string{JobTag("other")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Backup(ctx, r, backup.Options{Paths: []string{w.sources[0]}}); err != nil {
		t.Fatal(err)
	}
	_, err := w.drill(ctx, func(pass.Progress) {})
	var ce *pass.ClassError
	if !errors.As(err, &ce) || ce.Code != CodeNoSnapshot || pass.Retryable(ce.Class) {
		t.Fatalf("err = %v, want %s, not retried", err, CodeNoSnapshot)
	}

	w.job.Sources = w.sources[:1]
	w.backup(t, 1)
	w.job.Sources = w.sources
	res, err := w.drill(ctx, func(pass.Progress) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Figures.Skipped) != 1 || res.Figures.Skipped[0].Object != "source "+w.sources[1] || res.Figures.FilesSkipped != 1 {
		t.Errorf("skipped %+v, want the source not backed up yet", res.Figures.Skipped)
	}
	if res.Figures.Counters[CounterSnapshotsChecked] != 1 {
		t.Errorf("counters %v, want one snapshot checked", res.Figures.Counters)
	}
	w.noFolderLeft(t)
}

// A drill that finds damage fails with class integrity, names what it
// found, and leaves no folder behind: a file restored wrong is
// DRILL_MISMATCH naming its path, a chunk whose pack was damaged on disk
// is DRILL_UNREADABLE.
func TestDrillFindsDamage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		damage   func(t *testing.T, w *drillWorld)
		code     string
		mentions string
		mismatch int64
	}{
		{"a file restored wrong", func(t *testing.T, w *drillWorld) { w.fs.corrupt = "yes" },
			CodeDrillMismatch, "/small.txt (chunk 0 differs from the repository)", 2},
		{"a damaged pack", corruptFirstChunkOf("big.bin"), CodeDrillUnreadable, "/sub/big.bin", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newDrillWorld(t)
			w.backup(t, 1)
			tc.damage(t, w)
			res, err := w.drill(context.Background(), func(pass.Progress) {})
			var ce *pass.ClassError
			if !errors.As(err, &ce) || ce.Class != pass.ClassIntegrity || ce.Code != tc.code {
				t.Fatalf("err = %v, want class integrity, code %s", err, tc.code)
			}
			if !strings.Contains(err.Error(), tc.mentions) {
				t.Errorf("message %q does not name %q", err, tc.mentions)
			}
			if got := res.Figures.Counters[CounterMismatches]; got != tc.mismatch {
				t.Errorf("mismatches = %d, want %d", got, tc.mismatch)
			}
			w.noFolderLeft(t)
		})
	}
}

// corruptFirstChunkOf flips a byte in the middle of the first chunk of
// the file named name, in its pack file on disk.
func corruptFirstChunkOf(name string) func(t *testing.T, w *drillWorld) {
	return func(t *testing.T, w *drillWorld) {
		t.Helper()
		ctx := context.Background()
		r := w.repo(t)
		snaps, err := r.Snapshots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var chunk repo.ID
		err = r.Walk(ctx, snaps[0].Tree, repo.WalkOptions{}, repo.WalkVisitor{Node: func(e *repo.WalkEntry) error {
			if e.Node.Name == name && (chunk == repo.ID{}) {
				chunk = e.Node.Content[0]
			}
			return nil
		}})
		if err != nil || (chunk == repo.ID{}) {
			t.Fatalf("find %s: %v", name, err)
		}
		b, ok := r.Index().Lookup(chunk)
		if !ok {
			t.Fatal("the chunk is not indexed")
		}
		var pack string
		filepath.WalkDir(w.repoDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == b.Pack.String() {
				pack = p
			}
			return nil
		})
		f, err := os.OpenFile(pack, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		at := int64(b.Offset) + int64(b.Length)/2
		one := make([]byte, 1)
		if _, err := f.ReadAt(one, at); err != nil {
			t.Fatal(err)
		}
		one[0] ^= 0xff
		if _, err := f.WriteAt(one, at); err != nil {
			t.Fatal(err)
		}
	}
}

// A drill cancelled while it restores stops, says it was cancelled, and
// still removes its folder.
func TestDrillCancelledRemovesItsFolder(t *testing.T) {
	w := newDrillWorld(t)
	w.backup(t, 1)
	hold, entered := make(chan struct{}), make(chan struct{})
	w.fs.hold, w.fs.entered = hold, entered
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		res pass.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := w.drill(ctx, func(pass.Progress) {})
		done <- outcome{res, err}
	}()
	select {
	case <-entered: // the restore is creating its first file
	case out := <-done:
		t.Fatalf("the drill ended before it restored a file: %v", out.err)
	}
	cancel()
	close(hold)
	out := <-done
	var ce *pass.ClassError
	if !errors.As(out.err, &ce) || ce.Class != pass.ClassCancelled {
		t.Fatalf("err = %v, want class cancelled", out.err)
	}
	w.noFolderLeft(t)
}

// A drill killed before it could remove its folder (SIGKILL, a crash)
// leaves a restored copy; the next drill removes the folders of drills
// whose process is gone, counts them, and leaves alone those of a process
// that still runs and anything that is not a drill's folder.
func TestDrillRemovesTheFoldersOfKilledDrills(t *testing.T) {
	w := newDrillWorld(t)
	w.backup(t, 1)
	const deadPid = 1<<22 + 1 // above Linux's largest pid_max: no process has it
	if !lease.ProcessGone(deadPid) {
		t.Fatalf("ProcessGone(%d) = false, want true", deadPid)
	}
	killed := filepath.Join(w.drills, fmt.Sprintf("nightjar-drill-%d-123", deadPid))
	live := filepath.Join(w.drills, fmt.Sprintf("nightjar-drill-%d-456", os.Getppid()))
	other := filepath.Join(w.drills, "nightjar-drill-notapid")
	for _, dir := range []string{filepath.Join(killed, "data", "locked"), live, other} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(killed, "data", "locked", "secret.txt"), []byte("restored plaintext"))
	if err := os.Chmod(filepath.Join(killed, "data", "locked"), 0o500); err != nil {
		t.Fatal(err)
	}
	res, err := w.drill(context.Background(), func(pass.Progress) {})
	if err != nil {
		t.Fatalf("drill: %v", err)
	}
	if got := res.Figures.Counters[CounterAbandonedRemoved]; got != 1 {
		t.Errorf("counter %s = %d, want 1", CounterAbandonedRemoved, got)
	}
	if _, err := os.Lstat(killed); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the folder of the killed drill is still there (lstat: %v)", err)
	}
	for _, dir := range []string{live, other} {
		if _, err := os.Lstat(dir); err != nil {
			t.Errorf("%s was removed (lstat: %v), want it left alone", dir, err)
		}
	}
}
