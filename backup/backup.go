package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nightjar-backup/nightjar/backup/filter"
	"github.com/nightjar-backup/nightjar/backup/limit"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/chunker"
)

// ErrNothingSaved is returned when no source could be read at all.
var ErrNothingSaved = errors.New("no source could be read: nothing was backed up")

// NothingSavedError is the error wrapping ErrNothingSaved; it lists what
// could not be read, and why.
type NothingSavedError struct {
	Skipped []repo.Skip
}

func (e *NothingSavedError) Error() string {
	var parts []string
	for _, s := range e.Skipped {
		parts = append(parts, s.Path+": "+s.Reason)
	}
	return fmt.Sprintf("%v (%s)", ErrNothingSaved, strings.Join(parts, "; "))
}

func (e *NothingSavedError) Unwrap() error { return ErrNothingSaved }

// SourcesMissing reports whether every source was skipped because it (or a
// folder above it) did not exist when the backup started: a fault of the
// configuration or of a mount, which no retry heals.
func (e *NothingSavedError) SourcesMissing() bool {
	if len(e.Skipped) == 0 {
		return false
	}
	for _, s := range e.Skipped {
		if s.Reason != ReasonSourceMissing {
			return false
		}
	}
	return true
}

// ReasonSourceMissing is the skip reason of a source that did not exist
// when the backup started (told apart from a file that vanished while the
// walk was under way).
const ReasonSourceMissing = "source does not exist"

// Options describe one backup.
type Options struct {
	Paths    []string        // sources; made absolute and cleaned
	Tags     []string        // stored in the snapshot
	Excludes []string        // patterns, stored in the snapshot
	Exclude  *filter.Matcher // compiled Excludes; nil excludes nothing
	Limiter  *limit.Limiter  // shared by every read of file content; nil: unlimited
	Time     time.Time       // the snapshot's time; zero: when the backup started
	Parent   string          // snapshot to compare with; "": the latest of the same paths
	Run      int64           // the scheduled run that makes it, stored in the snapshot; 0: none
	Hostname string          // "": os.Hostname
	Version  string          // program version stored in the snapshot
	Workers  int             // file workers; 0: GOMAXPROCS
	FS       FS              // where the sources are read; nil: OSFS
	Now      func() time.Time
	// Progress, when set, keeps the backup's running figures, for
	// whoever shows them while it runs (Progress.Read).
	Progress *Progress
	// Scan, with Progress, counts the files and bytes below the sources
	// beside the backup, so that its total is known once they are walked.
	Scan bool
}

// Result is what a backup did.
type Result struct {
	Snapshot     *repo.Snapshot
	Parent       string // the parent snapshot used, if any
	AdoptedPacks int    // packs of interrupted backups taken into the index
	LostPacks    int    // indexed packs found missing or cut short: their blobs were stored again where met
	// Lacks is the metadata this platform does not have, or nightjar
	// cannot read on it, left empty in every node: for the command to
	// name once. Empty on Linux, macOS and FreeBSD.
	Lacks []Lack
}

// Partial reports whether some entries were skipped.
func (r *Result) Partial() bool { return r.Snapshot.Summary.Partial }

type archiver struct {
	r    Repository
	w    *repo.Writer // the backup's write session
	fs   FS
	opts Options
	gear *chunker.Gear
	cp   chunker.Params

	dirSlots chan struct{} // folders walked in goroutines of their own
	users    *ownerNames

	fileJobs  chan *fileJob
	saveJobs  chan saveJob
	workersWG sync.WaitGroup
	saversWG  sync.WaitGroup
	chunkBufs sync.Pool

	errOnce sync.Once
	err     error
	cancel  context.CancelFunc

	mu      sync.Mutex
	summary repo.SnapshotSummary
	links   map[devIno]*fileJob

	prog *Progress // the running figures: opts.Progress, or the archiver's own
}

type devIno struct{ dev, ino uint64 }

// fileJob is one regular file to read; done is closed when content or err
// is set.
type fileJob struct {
	path    string
	kind    fileKind // counted when the file is saved, not when it is queued
	node    *repo.Node
	content []repo.ID
	size    int64 // bytes read; -1: not read (content from the parent)
	err     error
	changed bool
	done    chan struct{}

	// A file worker only cuts a file into chunks; the savers hash them
	// (so that one big file still keeps every core busy) and put each ID
	// in its slot. pending counts the chunks not yet hashed, plus one for
	// the reader; whoever brings it to zero sets content and closes done.
	pending  atomic.Int32
	slots    [][]repo.ID       // blocks of a fixed capacity, so that slots never move
	compress repo.CompressHint // whether the chunks saved so far compressed
}

// slotBlock is the most chunk IDs in one block of fileJob.slots.
const slotBlock = 64

// newSlot returns the place of the next chunk's ID. capHint is how many
// chunks the file may have.
func (j *fileJob) newSlot(capHint int) *repo.ID {
	if n := len(j.slots); n == 0 || len(j.slots[n-1]) == cap(j.slots[n-1]) {
		j.slots = append(j.slots, make([]repo.ID, 0, min(max(capHint, 1), slotBlock)))
	}
	last := &j.slots[len(j.slots)-1]
	*last = append(*last, repo.ID{})
	return &(*last)[len(*last)-1]
}

// release ends the reader's or one saver's part of the job.
func (j *fileJob) release() {
	if j.pending.Add(-1) > 0 {
		return
	}
	if j.err == nil {
		n := 0
		for _, b := range j.slots {
			n += len(b)
		}
		j.content = make([]repo.ID, 0, n)
		for _, b := range j.slots {
			j.content = append(j.content, b...)
		}
	}
	j.slots = nil
	close(j.done)
}

// fileKind is how a file compares with the parent snapshot.
type fileKind int

const (
	fileNew fileKind = iota
	fileChanged
	fileUnchanged
)

// saveJob is one chunk for the savers to hash and store.
type saveJob struct {
	data []byte
	buf  *[]byte
	file *fileJob
	slot *repo.ID // where the chunk's ID goes
}

// Backup makes one snapshot of opts.Paths in r. It returns an error
// wrapping ErrNothingSaved when no source could be read; a snapshot with
// skipped entries is returned with Summary.Partial set. It writes in one
// write session, which adopts the packs of interrupted backups first: when
// Backup returns, no pack write of it goes on.
func Backup(ctx context.Context, r Repository, opts Options) (*Result, error) {
	started := snapshotDefaults(&opts.Now, &opts.Time, &opts.Hostname)
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	paths, err := cleanPaths(opts.Paths)
	if err != nil {
		return nil, err
	}
	opts.Paths = paths
	if opts.FS == nil {
		opts.FS = OSFS{}
	}

	cfg := r.Config().Chunker
	a := &archiver{
		r: r, fs: opts.FS, opts: opts,
		gear:     chunker.NewGear(r.ChunkerKey()),
		cp:       chunker.Params{Min: cfg.Min, Avg: cfg.Avg, Max: cfg.Max},
		users:    newOwnerNames(),
		fileJobs: make(chan *fileJob, opts.Workers*4),
		saveJobs: make(chan saveJob, opts.Workers*2),
		links:    map[devIno]*fileJob{},
		dirSlots: make(chan struct{}, 4*opts.Workers),
	}
	a.chunkBufs.New = func() any { b := make([]byte, 0, a.cp.Max); return &b }
	a.prog = opts.Progress
	if a.prog == nil {
		a.prog = &Progress{}
	}
	a.prog.start(opts.Workers)
	// endScan stops the scanner beside the backup (complete: lets it
	// finish first, so that a backup that did its work ends with its
	// total known, however the two raced).
	endScan := func(complete bool) {}
	if opts.Progress != nil && opts.Scan {
		scanCtx, stopScan := context.WithCancel(ctx)
		scanned := make(chan struct{})
		go func() {
			defer close(scanned)
			a.prog.scan(scanCtx, opts.FS, opts.Paths, opts.Exclude)
		}()
		var once sync.Once
		endScan = func(complete bool) {
			once.Do(func() {
				if !complete {
					stopScan()
				}
				<-scanned
				stopScan()
			})
		}
		defer endScan(false)
	}

	result := &Result{Lacks: platformLacks}
	var root repo.ID
	written, err := r.WriteSession(ctx, repo.WriteOptions{AdoptPacks: true}, func(ctx context.Context, w *repo.Writer) error {
		a.w = w
		a.prog.writer.Store(w)
		var err error
		root, err = a.run(ctx, result)
		return err
	})
	if err != nil {
		return nil, err
	}
	endScan(true)
	// The session has ended: every blob the trees refer to is durable, and
	// the snapshot may name them.
	stats := written.Stats()
	result.AdoptedPacks = stats.AdoptedPacks
	result.LostPacks = stats.LostPacks
	s := &a.summary
	s.Started, s.Finished = started.UTC(), opts.Now().UTC()
	s.BytesRead = a.prog.bytesRead.Load()
	s.BytesAdded = stats.Bytes
	s.Partial = s.FilesSkipped > 0
	snap := &repo.Snapshot{
		Run:            opts.Run,
		Time:           opts.Time.UTC(),
		Hostname:       opts.Hostname,
		Username:       a.users.current(),
		Paths:          opts.Paths,
		Tags:           opts.Tags,
		Excludes:       opts.Excludes,
		Parent:         result.Parent,
		Tree:           root,
		ProgramVersion: opts.Version,
		Summary:        *s,
	}
	if err := written.SaveSnapshot(ctx, snap); err != nil {
		return nil, err
	}
	result.Snapshot = snap
	return result, nil
}

// run walks the sources inside the write session and returns the root
// tree.
func (a *archiver) run(ctx context.Context, result *Result) (repo.ID, error) {
	parent, err := a.findParent(ctx)
	if err != nil {
		return repo.ID{}, err
	}
	if parent != nil {
		result.Parent = parent.ID
	}

	ctx, a.cancel = context.WithCancel(ctx)
	defer a.cancel()
	for i := 0; i < a.opts.Workers; i++ {
		a.workersWG.Add(1)
		go a.fileWorker(ctx, i)
		a.saversWG.Add(1)
		go a.saver(ctx)
	}
	var parentTree *repo.ID
	if parent != nil {
		parentTree = &parent.Tree
	}
	root, readable, walkErr := a.saveRoot(ctx, parentTree)
	close(a.fileJobs)
	a.workersWG.Wait()
	close(a.saveJobs)
	a.saversWG.Wait()
	if walkErr != nil {
		a.fail(walkErr)
	}
	if a.err != nil {
		return repo.ID{}, a.err
	}
	if readable == 0 {
		return repo.ID{}, &NothingSavedError{Skipped: a.summary.Skipped}
	}
	return root, nil
}

func cleanPaths(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("no source path given")
	}
	var out []string
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("source %q: %w", p, err)
		}
		if _, err := sourceElements(abs); err != nil {
			return nil, fmt.Errorf("source %q: %w", p, err)
		}
		out = append(out, abs)
	}
	sort.Strings(out)
	// Drop sources inside another source: they are backed up with it.
	kept := out[:0]
	for _, p := range out {
		if len(kept) > 0 && within(kept[len(kept)-1], p) {
			continue
		}
		kept = append(kept, p)
	}
	return kept, nil
}

func (a *archiver) fail(err error) {
	a.errOnce.Do(func() {
		a.err = err
		a.cancel()
	})
}

func (a *archiver) skip(path, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.summary.FilesSkipped++
	a.prog.skipped.Add(1)
	if len(a.summary.Skipped) < repo.MaxListedSkips {
		a.summary.Skipped = append(a.summary.Skipped, repo.Skip{Path: path, Reason: reason})
	}
}

func (a *archiver) findParent(ctx context.Context) (*repo.Snapshot, error) {
	if a.opts.Parent != "" {
		s, err := a.r.FindSnapshot(ctx, a.opts.Parent, nil)
		if err != nil {
			return nil, fmt.Errorf("parent: %w", err)
		}
		return s, nil
	}
	s, err := a.r.FindSnapshot(ctx, "latest", a.opts.Paths)
	if errors.Is(err, repo.ErrSnapshotNotFound) {
		return nil, nil
	}
	return s, err
}

// saveRoot builds the root tree: every source under its full path, with
// the directories above it recorded as they are. It returns how many
// sources could be read.
func (a *archiver) saveRoot(ctx context.Context, parentTree *repo.ID) (repo.ID, int, error) {
	type dirEntry struct {
		children map[string]*dirEntry
		path     string // its path on this system
		source   string // set for a source itself
	}
	top := &dirEntry{children: map[string]*dirEntry{}}
	for _, p := range a.opts.Paths {
		elems, err := sourceElements(p)
		if err != nil {
			return repo.ID{}, 0, fmt.Errorf("source %q: %w", p, err)
		}
		d := top
		for i, part := range elems {
			next, ok := d.children[part]
			if !ok {
				next = &dirEntry{children: map[string]*dirEntry{}, path: osPath(elems[:i+1])}
				d.children[part] = next
			}
			d = next
		}
		d.source = p
	}
	readable := 0
	var build func(d *dirEntry, parent *repo.ID) (repo.ID, error)
	build = func(d *dirEntry, parent *repo.ID) (repo.ID, error) {
		if d.source != "" { // only for "/" itself
			tree, err := a.saveDirContents(ctx, d.source, parent)
			readable++
			if err != nil {
				return repo.ID{}, err
			}
			return a.w.SaveTree(ctx, tree)
		}
		parentNodes := a.loadParent(ctx, parent)
		names := make([]string, 0, len(d.children))
		for name := range d.children {
			names = append(names, name)
		}
		sort.Strings(names)
		tree := &repo.Tree{}
		for _, name := range names {
			child := d.children[name]
			p := child.path
			prev := parentNodes[name]
			if child.source != "" {
				node, ok, err := a.saveEntry(ctx, p, prev)
				if err != nil {
					return repo.ID{}, err
				}
				if ok {
					readable++
					node.Name = name // a drive's own name is "\"
					tree.Nodes = append(tree.Nodes, *node)
				}
				continue
			}
			// A folder above a source is followed when it is a symlink
			// (its node is the folder it leads to): the source's content
			// is reached through it, and a symlink node could not hold it.
			fi, err := a.fs.Stat(p)
			if errors.Is(err, fs.ErrNotExist) {
				// Nothing under it can be read: its sources are missing,
				// not vanished while being read.
				var skipSources func(d *dirEntry)
				skipSources = func(d *dirEntry) {
					if d.source != "" {
						a.skip(d.source, ReasonSourceMissing)
					}
					for _, name := range slices.Sorted(maps.Keys(d.children)) {
						skipSources(d.children[name])
					}
				}
				skipSources(child)
				continue
			}
			if err != nil {
				a.skip(p, "source's parent folder: "+describe(err))
				continue
			}
			if !fi.IsDir() {
				a.skip(p, "source's parent is not a folder")
				continue
			}
			node, err := a.nodeFrom(p, fi, prev)
			if err != nil {
				a.skip(p, describe(err))
				continue
			}
			sub, err := build(child, parentSubtree(prev))
			if err != nil {
				return repo.ID{}, err
			}
			node.Name = name
			node.Subtree = &sub
			tree.Nodes = append(tree.Nodes, *node)
		}
		return a.w.SaveTree(ctx, tree)
	}
	root, err := build(top, parentTree)
	if err != nil {
		return repo.ID{}, 0, err
	}
	return root, readable, nil
}

// loadParent returns the nodes of a parent snapshot's tree by name, or nil.
// A parent that cannot be read only costs re-reading files.
func (a *archiver) loadParent(ctx context.Context, id *repo.ID) map[string]*repo.Node {
	if id == nil {
		return nil
	}
	tree, err := a.r.LoadTree(ctx, *id)
	if err != nil {
		return nil
	}
	nodes := make(map[string]*repo.Node, len(tree.Nodes))
	for i := range tree.Nodes {
		nodes[tree.Nodes[i].Name] = &tree.Nodes[i]
	}
	return nodes
}

// saveEntry saves one file system entry. ok is false when it was skipped.
func (a *archiver) saveEntry(ctx context.Context, p string, prev *repo.Node) (*repo.Node, bool, error) {
	fi, err := a.fs.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		a.skip(p, ReasonSourceMissing)
		return nil, false, nil
	}
	if err != nil {
		a.skip(p, describe(err))
		return nil, false, nil
	}
	node, err := a.nodeFrom(p, fi, prev)
	if err != nil {
		a.skip(p, describe(err))
		return nil, false, nil
	}
	switch node.Type {
	case repo.NodeDir:
		d := a.startDir(ctx, p, parentSubtree(prev), 0)
		<-d.done
		if d.err != nil {
			return nil, false, d.err
		}
		node.Subtree = &d.id
	case repo.NodeFile:
		// Content is filled in by finishFile; the caller waits.
		job := a.submitFile(ctx, p, node, prev)
		if job == nil {
			return nil, false, ctx.Err()
		}
		<-job.done
		if !a.finishFile(job) {
			return nil, false, nil
		}
	default:
		a.mu.Lock()
		a.summary.OtherEntries++
		a.mu.Unlock()
	}
	return node, true, nil
}

// saveDirContents lists a directory and saves everything in it. Files are
// read by the worker pool while the walker goes on into subdirectories.
func (a *archiver) saveDirContents(ctx context.Context, dir string, parentTree *repo.ID) (*repo.Tree, error) {
	parentNodes := a.loadParent(ctx, parentTree)
	entries, err := a.readDirNames(dir)
	if err != nil {
		a.skip(dir, "cannot list folder: "+describe(err))
		return &repo.Tree{}, ctx.Err()
	}
	tree := &repo.Tree{Nodes: make([]repo.Node, 0, len(entries))}
	var jobs []*fileJob
	var jobIndex []int
	var dirs []*dirJob
	// Subfolders may run in other goroutines: wait for them whatever
	// happens, so that none outlives the walk.
	defer func() {
		for _, d := range dirs {
			<-d.done
		}
	}()
	for _, name := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := filepath.Join(dir, name)
		if a.opts.Exclude != nil && a.opts.Exclude.Match(excludePath(p)) {
			continue
		}
		fi, err := a.fs.Lstat(p)
		if err != nil {
			a.skip(p, describe(err))
			continue
		}
		prev := parentNodes[name]
		node, err := a.nodeFrom(p, fi, prev)
		if err != nil {
			a.skip(p, describe(err))
			continue
		}
		switch node.Type {
		case repo.NodeDir:
			dirs = append(dirs, a.startDir(ctx, p, parentSubtree(prev), len(tree.Nodes)))
		case repo.NodeFile:
			job := a.submitFile(ctx, p, node, prev)
			if job == nil {
				return nil, ctx.Err()
			}
			jobs = append(jobs, job)
			jobIndex = append(jobIndex, len(tree.Nodes))
		default:
			a.mu.Lock()
			a.summary.OtherEntries++
			a.mu.Unlock()
		}
		tree.Nodes = append(tree.Nodes, *node)
	}
	for _, d := range dirs {
		<-d.done
		if d.err != nil {
			return nil, d.err
		}
		id := d.id
		tree.Nodes[d.index].Subtree = &id
	}
	// Collect the files in order; drop the ones that could not be read.
	drop := map[int]bool{}
	for i, job := range jobs {
		select {
		case <-job.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if a.finishFile(job) {
			tree.Nodes[jobIndex[i]] = *job.node
		} else {
			drop[jobIndex[i]] = true
		}
	}
	if len(drop) > 0 {
		kept := tree.Nodes[:0]
		for i, n := range tree.Nodes {
			if !drop[i] {
				kept = append(kept, n)
			}
		}
		tree.Nodes = kept
	}
	return tree, nil
}

// parentSubtree is the tree of the same folder in the parent snapshot, or
// nil when it was no folder there.
func parentSubtree(prev *repo.Node) *repo.ID {
	if prev != nil && prev.Type == repo.NodeDir {
		return prev.Subtree
	}
	return nil
}

// dirJob is a subfolder being saved, maybe by another goroutine.
type dirJob struct {
	index int // of its node in the parent's tree
	id    repo.ID
	err   error
	done  chan struct{}
}

// startDir saves a subfolder and its tree: in a goroutine of its own when
// one of the walker's slots is free (listing and stat-ing folders is mostly
// waiting for the file system), else right here. A goroutine never waits
// for a slot, so the walk cannot deadlock.
func (a *archiver) startDir(ctx context.Context, p string, prevTree *repo.ID, index int) *dirJob {
	d := &dirJob{index: index, done: make(chan struct{})}
	run := func() {
		defer close(d.done)
		sub, err := a.saveDirContents(ctx, p, prevTree)
		if err != nil {
			d.err = err
			a.fail(err)
			return
		}
		if d.id, d.err = a.w.SaveTree(ctx, sub); d.err != nil {
			a.fail(d.err)
			return
		}
		a.prog.savedDir(prevTree, d.id)
		a.mu.Lock()
		a.summary.Dirs++
		a.mu.Unlock()
	}
	select {
	case a.dirSlots <- struct{}{}:
		go func() {
			defer func() { <-a.dirSlots }()
			run()
		}()
	default:
		run()
	}
	return d
}

// readDirNames lists a directory's names in byte order.
func (a *archiver) readDirNames(dir string) ([]string, error) {
	names, err := a.fs.ReadDirNames(dir)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// submitFile queues a regular file: unchanged files take their content from
// the parent snapshot, hardlinks share the job of the first link.
func (a *archiver) submitFile(ctx context.Context, p string, node *repo.Node, prev *repo.Node) *fileJob {
	job := &fileJob{path: p, node: node, size: -1, done: make(chan struct{})}
	// Content whose blobs were lost with their pack is read again (healing).
	if prev != nil && unchanged(prev, node) && a.w.HasAll(prev.Content) {
		job.content, job.kind = prev.Content, fileUnchanged
		close(job.done)
		a.prog.filesDone.Add(1)
		a.prog.bytesKept.Add(int64(node.Size))
		return job
	}
	if prev != nil && prev.Type == repo.NodeFile {
		job.kind = fileChanged
	}
	if node.Links > 1 {
		key := devIno{node.Device, node.Inode}
		a.mu.Lock()
		first, seen := a.links[key]
		if !seen {
			a.links[key] = job
		}
		a.mu.Unlock()
		if seen {
			a.prog.filesDone.Add(1)
			a.prog.bytesKept.Add(int64(node.Size))
			go func() {
				<-first.done
				job.content, job.err, job.changed, job.size = first.content, first.err, first.changed, first.size
				close(job.done)
			}()
			return job
		}
	}
	select {
	case a.fileJobs <- job:
		return job
	case <-ctx.Done():
		// Later hard links to this file wait for done.
		job.err = ctx.Err()
		close(job.done)
		return nil
	}
}

// unchanged reports whether a file can take its content from the parent
// snapshot without being read: same size, mtime, ctime and inode.
func unchanged(prev, cur *repo.Node) bool {
	return cur.Type == repo.NodeFile && sameInodeAndCTime(prev, cur) && prev.Size == cur.Size &&
		prev.MTime.Equal(cur.MTime) && (len(prev.Content) > 0 || prev.Size == 0)
}

// finishFile fills the node from a finished job; false means skipped.
func (a *archiver) finishFile(job *fileJob) bool {
	if job.err != nil {
		a.skip(job.path, describe(job.err))
		return false
	}
	job.node.Content = job.content
	if job.size >= 0 {
		// The size is what was read, even if the file changed meanwhile.
		job.node.Size = uint64(job.size)
	}
	a.mu.Lock()
	switch job.kind {
	case fileNew:
		a.summary.FilesNew++
	case fileChanged:
		a.summary.FilesChanged++
	case fileUnchanged:
		a.summary.FilesUnchanged++
	}
	a.summary.TotalSize += int64(job.node.Size)
	if job.changed {
		a.summary.ChangedDuring = append(a.summary.ChangedDuring, job.path)
	}
	a.mu.Unlock()
	return true
}

func (a *archiver) fileWorker(ctx context.Context, worker int) {
	defer a.workersWG.Done()
	ch := chunker.New(nil, a.gear, a.cp)
	for job := range a.fileJobs {
		job.pending.Store(1)
		if ctx.Err() != nil {
			job.err = ctx.Err()
		} else {
			a.prog.reading(worker, job.path)
			job.changed, job.err = a.readFile(ctx, ch, job)
			a.prog.reading(worker, "")
			a.prog.filesDone.Add(1)
		}
		job.release()
	}
}

// readFile cuts one file into chunks and hands them to the savers.
func (a *archiver) readFile(ctx context.Context, ch *chunker.Chunker, job *fileJob) (changed bool, err error) {
	f, err := a.fs.OpenFile(job.path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !before.Mode().IsRegular() {
		return false, errors.New("was replaced by something that is not a regular file")
	}
	var rd io.Reader = f
	if a.opts.Limiter != nil {
		rd = a.opts.Limiter.Reader(ctx, rd)
	}
	counted := &countingReader{r: rd, n: &a.prog.bytesRead}
	ch.Reset(counted)
	chunksHint := int(before.Size()/int64(a.cp.Min)) + 1
	for {
		// The chunk is read into a buffer the saver gives back when done
		// with it: no copy between the file and the saver.
		bufp := a.chunkBufs.Get().(*[]byte)
		data, err := ch.NextInto(*bufp)
		if err != nil {
			a.chunkBufs.Put(bufp)
			if err == io.EOF {
				break
			}
			return false, fmt.Errorf("read: %w", err)
		}
		job.pending.Add(1)
		select {
		case a.saveJobs <- saveJob{data: data, buf: bufp, file: job, slot: job.newSlot(chunksHint)}:
		case <-ctx.Done():
			job.pending.Add(-1)
			a.chunkBufs.Put(bufp)
			return false, ctx.Err()
		}
	}
	after, err := f.Stat()
	if err != nil {
		return false, err
	}
	job.size = counted.total
	changed = counted.total != before.Size() || !after.ModTime().Equal(before.ModTime()) ||
		after.Size() != before.Size() || ctimeOf(after) != ctimeOf(before)
	return changed, nil
}

// saver hashes chunks, and stores the ones the repository does not have
// yet (the first saver to reserve an ID stores it).
func (a *archiver) saver(ctx context.Context) {
	defer a.saversWG.Done()
	for job := range a.saveJobs {
		if ctx.Err() == nil {
			id := a.r.BlobID(job.data)
			*job.slot = id
			if _, err := a.w.SaveChunk(ctx, repo.DataBlob, id, job.data, &job.file.compress); err != nil {
				a.fail(err)
			}
		}
		*job.buf = job.data[:0]
		a.chunkBufs.Put(job.buf)
		job.file.release()
	}
}

type countingReader struct {
	r     io.Reader
	n     *atomic.Int64
	total int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.total += int64(n)
	c.n.Add(int64(n))
	return n, err
}

// describe turns a file system error into a short reason.
func describe(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "vanished before it could be read"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	return err.Error()
}

// snapshotDefaults fills in what a backup's options leave out (the clock,
// the snapshot's time and host); it returns when the backup started.
// Backup and Stream share it.
func snapshotDefaults(now *func() time.Time, at *time.Time, hostname *string) time.Time {
	if *now == nil {
		*now = time.Now
	}
	started := (*now)()
	if at.IsZero() {
		*at = started
	}
	if *hostname == "" {
		*hostname, _ = os.Hostname()
	}
	return started
}
