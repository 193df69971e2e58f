package restore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nightjar-backup/nightjar/directio"
	"github.com/nightjar-backup/nightjar/repo"
)

// Repository is what a restore reads: the snapshot's trees through the
// walker, its blobs, and their sizes from the index.
type Repository interface {
	Walk(ctx context.Context, root repo.ID, opts repo.WalkOptions, v repo.WalkVisitor) error
	LoadBlobsInOrder(ctx context.Context, ids []repo.ID, buf *repo.BlobBuffer, fn func(i int, plain []byte) error) error
	// StreamBlobsInOrder is LoadBlobsInOrder for a pack job's blobs, in
	// the order of one pack: one stream per pack where the backend can.
	StreamBlobsInOrder(ctx context.Context, ids []repo.ID, buf *repo.BlobBuffer, fn func(i int, plain []byte) error) error
	Index() *repo.Index
	BlobID(data []byte) repo.ID
	// NewReadPlan returns a plan of the reads to come, or nil when the
	// backend gains nothing from one (plan.go).
	NewReadPlan() *repo.ReadPlan
}

var _ Repository = (*repo.Repository)(nil)

// Options describe one restore.
type Options struct {
	Target    string           // folder to restore into; created if missing
	Include   repo.PathMatcher // nil: everything
	Exclude   repo.PathMatcher // nil: nothing
	Overwrite bool             // replace existing files (never folders)
	Verify    bool             // read back every restored file and compare with the repository
	Workers   int              // file workers; 0: twice GOMAXPROCS
	FS        FS               // where the target is; nil: the OS
	Progress  *Progress        // the running figures, for whoever shows them; nil: none kept
}

// Result is what a restore did. Every entry that was not restored is in
// Skipped with its reason; FilesSkipped and BytesSkipped count the regular
// files among them, Damaged the entries lost to damage in the repository.
type Result struct {
	Files          int64
	Dirs           int64
	Others         int64 // symlinks, FIFOs, devices
	Bytes          int64
	FilesSkipped   int64 // regular files not restored, for any reason
	BytesSkipped   int64 // their size in the snapshot
	Damaged        int64 // entries not restored because the repository is damaged
	Verified       int64
	BytesVerified  int64 // the content of the files verified
	Skipped        []repo.Skip
	OwnershipKept  bool // false when not run as root
	VerifyFailures []repo.Skip
	// Lacks is what the platform restored on could not restore, each
	// named once (owners on Windows, say).
	Lacks []Lack
}

// ErrVerifyFailed is returned when a restored file differs from the
// repository.
var ErrVerifyFailed = errors.New("restored files differ from the repository")

// DamagedError is returned, with the Result, by a restore that restored
// all it could but found damage in the repository: blobs or trees that
// cannot be read. It wraps the first damage met (repo.ErrIntegrity, a
// missing pack, a failed read), naming the entry it cost. A read that the
// storage failed after its retries is no damage: it stops the restore
// (Run).
type DamagedError struct {
	Entries int64 // entries not restored because of the damage
	First   error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("%d entries could not be restored because the repository is damaged; the first: %v", e.Entries, e.First)
}

func (e *DamagedError) Unwrap() error { return e.First }

type restorer struct {
	r      Repository
	fs     FS
	opts   Options
	root   string
	asRoot bool
	mu     sync.Mutex
	result Result
	// Hardlinks: the first name of an inode is restored as a file and
	// recorded in placed once it is in place (with the restored file's own
	// device and inode); the other names are linked to it at the end.
	linkFirst map[inode]bool
	placed    map[inode]placedFile
	// folders are the folders on the path of the entry the walk is at,
	// the target's root first.
	folders []*folder
	dirs    []dirMeta // folders made or found, parents first; their metadata is set last, in reverse
	// restored holds the snapshot paths of the folders the restore made
	// or found and of the files it put in place: what verify reads back.
	// Nil without Verify.
	restored map[string]bool
	// unreadable holds the paths of the folders whose tree could not be
	// read, reported once by the restore (verify does not again).
	unreadable  map[string]bool
	firstDamage error
	// stop ends the restore's own context with the storage's failure
	// (storageFailed): the walk and the workers stop at it.
	stop   context.CancelCauseFunc
	fileWG sync.WaitGroup
	parts  chan filePart
	// plan is set when the backend plans the restore's reads: big files,
	// and the files whose blobs all lie in their packs, are then read
	// pack by pack (bypack.go), held in batch until their pack jobs are
	// handed out.
	plan        *repo.ReadPlan
	batch       []*pendingFile
	batchChunks int
	// batchOpen counts the files of batch that may stay open across pack
	// jobs or through much of one, batchBrief the others (batchFiles,
	// batchBriefFiles); batchShared holds the chunks of the brief ones of
	// several chunks.
	batchOpen   int
	batchBrief  int
	batchShared map[repo.ID]struct{}
	prog        *Progress // opts.Progress, or the restorer's own
	// ownCalls: opts.FS is the OS itself or a wrapper that takes over its
	// own calls whole (unnamedWrapper), so files may be made with no name
	// and set their metadata through their descriptors. A wrapper that
	// embeds OS to watch or limit the restore would be bypassed by both.
	ownCalls bool
	// noUnnamed: files get temporary names, because of Overwrite (a file
	// with no name cannot be linked over an entry), an FS without
	// unnamedCreator, the probe's failure at the start (canNameUnnamed),
	// or a folder's file system that refused one since.
	noUnnamed atomic.Bool
}

// folder is a folder on the path of the walk. With include rules, a
// folder that only leads to selected entries is made when the first of
// them is restored, so that a partial restore makes only the folders on
// the paths it restores.
type folder struct {
	path     string // in the snapshot
	node     repo.Node
	selected bool // the include rules select it, and so everything below it
	made     bool // it exists in the target (the root always does)
	failed   bool // it could not be made: nothing below it is restored (its skip says why)
}

type restoreFile struct {
	node   repo.Node
	target string
	shown  string
}

// partChunks is the most chunks one piece of file work writes: a larger
// file is cut into parts (about 8 MiB each with the default chunk sizes)
// that the file workers write side by side, so that a single big file
// still keeps every core busy.
const partChunks = 32

// pendingFile is a regular file being restored. Its parts write into one
// file with no name or a temporary name; whichever part finishes last
// puts it in place.
type pendingFile struct {
	restoreFile
	open   sync.Once
	tmp    string // the temporary name; "" for a file with no name
	out    File
	meta   metaSetter   // out, when it sets its metadata itself; nil: by name
	direct File         // out opened again for direct writes; nil: page cache only
	parts  atomic.Int32 // parts not yet finished
	// writing lets one part at a time write: ext4 (like most file
	// systems) holds the inode's lock for each buffered write, and the
	// kernel's waiters spin for it. Parked here instead, they cost
	// nothing: that spinning was 14% of a restore's CPU time.
	writing sync.Mutex
	written atomic.Int64 // bytes the parts have covered, holes included
	holes   atomic.Bool  // a chunk of zeros was left unwritten: the size is set at the end
	mu      sync.Mutex
	err     error // the first failure of any part
}

// filePart is the chunks [first, end) of a file's content, whose first
// byte is at offset; or, when job is set, a pack job (bypack.go).
type filePart struct {
	file       *pendingFile
	first, end int
	offset     int64
	job        *packJob
}

type dirMeta struct {
	node   repo.Node
	target string
	shown  string
}

// inode is a file's device and inode in the snapshot.
type inode struct{ dev, ino uint64 }

type deferredLink struct {
	target, shown string
	node          repo.Node
}

// placedFile is a restored file that later names of its inode link to.
type placedFile struct {
	path string
	info fs.FileInfo // the file as it was placed, for sameFile
}

// Run writes the tree of snapshot s into opts.Target.
//
// A read that the storage failed after the backend's retries (an error
// matching repo.ErrStorageUnavailable: an S3 server down or refusing every
// try) stops the restore as a cancellation does: no read is started after
// it, the files being written are removed, and Run returns the Result of
// what was in place by then with an error wrapping the failure. What it
// left unrestored is not counted as damage: the repository may be whole.
// The caller's cancellation returns no Result.
func Run(parent context.Context, r Repository, s *repo.Snapshot, opts Options) (*Result, error) {
	if opts.Workers <= 0 {
		// More workers than cores: file creation and writes block in the
		// kernel, and another worker's decryption fills that time.
		opts.Workers = 2 * runtime.GOMAXPROCS(0)
	}
	if opts.FS == nil {
		opts.FS = OS{}
	}
	root, err := filepath.Abs(opts.Target)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	// The target and the folders leading to it are the user's to name:
	// they are made as the OS resolves them, not through opts.FS.
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("target %s is not a folder", root)
	}
	// The target stays open for every call below it until the restore
	// ends, so that each opens only the folder it needs.
	defer holdRoot(root)()
	ctx, stop := context.WithCancelCause(parent)
	defer stop(nil)
	rs := &restorer{
		r: r, fs: opts.FS, opts: opts, root: root, asRoot: os.Geteuid() == 0,
		linkFirst:  map[inode]bool{},
		placed:     map[inode]placedFile{},
		parts:      make(chan filePart, opts.Workers*4),
		folders:    []*folder{{path: "/", selected: opts.Include == nil, made: true}},
		unreadable: map[string]bool{},
		stop:       stop,
	}
	_, plainOS := opts.FS.(OS)
	_, wrapper := opts.FS.(unnamedWrapper)
	rs.ownCalls = plainOS || wrapper
	rs.noUnnamed.Store(opts.Overwrite || !rs.ownCalls || !rs.canNameUnnamed())
	rs.result.OwnershipKept = rs.asRoot
	rs.result.Lacks = platformLacks()
	rs.prog = opts.Progress
	stopCounting := func() {}
	if rs.prog == nil {
		rs.prog = &Progress{}
	} else {
		counted := make(chan struct{})
		countCtx, stopCount := context.WithCancel(ctx)
		go func() {
			defer close(counted)
			rs.count(countCtx, s)
		}()
		var once sync.Once
		stopCounting = func() { once.Do(func() { stopCount(); <-counted }) }
		defer stopCounting()
	}
	if opts.Verify {
		rs.restored = map[string]bool{}
	}
	// Best effort: a file or folder that cannot be restored (damage in
	// the repository, a local error) is skipped with its reason and the
	// rest goes on. Only the caller's cancellation and the storage's
	// failure (storageFailed) end the restore early.
	endPlan, plan, err := rs.planReads(ctx, s.Tree)
	if res, err := rs.ended(parent, ctx, err); err != nil {
		return res, err
	}
	defer endPlan()
	rs.plan = plan
	for i := 0; i < opts.Workers; i++ {
		rs.fileWG.Add(1)
		go rs.fileWorker(ctx)
	}
	var links []deferredLink
	walkErr := rs.walk(ctx, s.Tree, &links)
	if err := rs.flushBatch(ctx); err != nil && walkErr == nil {
		walkErr = err
	}
	close(rs.parts)
	rs.fileWG.Wait()
	if res, err := rs.ended(parent, ctx, walkErr); err != nil {
		return res, err
	}
	for _, l := range links {
		rs.restoreLink(ctx, l)
	}
	if res, err := rs.ended(parent, ctx, nil); err != nil {
		return res, err
	}
	rs.finishFolders()
	// Everything is in place: what was done is the total, when the count
	// beside the restore had not finished.
	stopCounting()
	rs.prog.settle()
	rs.sortSkipped()
	var errs []error
	if opts.Verify {
		rs.prog.verifying.Store(true)
		if err := rs.verify(ctx, s.Tree); err != nil {
			if res, err := rs.ended(parent, ctx, nil); err != nil {
				return res, err
			}
			errs = append(errs, err)
		}
	}
	if rs.result.Damaged > 0 {
		errs = append(errs, &DamagedError{Entries: rs.result.Damaged, First: rs.firstDamage})
	}
	return &rs.result, errors.Join(errs...)
}

// ended says what Run returns when the restore cannot go on: after the
// caller's cancellation nothing but its error; after the storage's failure
// (storageFailed) the result so far and that failure; else, when err is
// set (a walk that failed), err alone. Both nil: the restore goes on.
// Called only while no file worker runs.
func (rs *restorer) ended(parent, ctx context.Context, err error) (*Result, error) {
	if perr := parent.Err(); perr != nil {
		return nil, perr
	}
	if cause := context.Cause(ctx); cause != nil {
		// What is in place stays, in folders with their metadata.
		rs.finishFolders()
		rs.sortSkipped()
		return &rs.result, cause
	}
	return nil, err
}

// finishFolders sets the metadata of the folders made, once the file
// workers are done: last, children before their parents, so that writing
// into a folder does not change its mtime afterwards and read-only
// folders can be filled; every folder made gets it, also one of which
// something could not be restored. A second call does nothing.
func (rs *restorer) finishFolders() {
	for i := len(rs.dirs) - 1; i >= 0; i-- {
		d := rs.dirs[i]
		if err := rs.setMeta(rs.pathMeta(d.target), &d.node); err != nil {
			rs.skip(d.shown, "metadata: "+err.Error())
		}
	}
	rs.dirs = nil
}

// storageFailed reports whether err, met reading the entry at snapshot
// path p, is the storage's failure after the backend's retries, and then
// stops the restore with it, the first such failure winning: every further
// read would spend the retries again and fail alike, and what it would
// report is no damage of the repository.
func (rs *restorer) storageFailed(p string, err error) bool {
	if !errors.Is(err, repo.ErrStorageUnavailable) {
		return false
	}
	rs.stop(fmt.Errorf("restore stopped at %s: %w", p, err))
	return true
}

// sortSkipped puts the skipped entries in the order of their paths,
// whichever worker gave up first.
func (rs *restorer) sortSkipped() {
	slices.SortStableFunc(rs.result.Skipped, func(a, b repo.Skip) int { return strings.Compare(a.Path, b.Path) })
}

func (rs *restorer) skip(p, reason string) {
	rs.mu.Lock()
	rs.result.Skipped = append(rs.result.Skipped, repo.Skip{Path: p, Reason: reason})
	rs.mu.Unlock()
}

// markRestored records that the entry at snapshot path p is in place, for
// verify.
func (rs *restorer) markRestored(p string) {
	if rs.restored == nil {
		return
	}
	rs.mu.Lock()
	rs.restored[p] = true
	rs.mu.Unlock()
}

// damaged records that the entry at snapshot path p was not restored
// because the repository is damaged.
func (rs *restorer) damaged(p string, err error) {
	rs.mu.Lock()
	rs.result.Skipped = append(rs.result.Skipped, repo.Skip{Path: p, Reason: err.Error()})
	rs.result.Damaged++
	if rs.firstDamage == nil {
		rs.firstDamage = fmt.Errorf("restore %s: %w", p, err)
	}
	rs.mu.Unlock()
}

// fileFailed records that the regular file at snapshot path p, of size
// bytes, was not restored.
func (rs *restorer) fileFailed(p string, size uint64, err error) {
	rs.prog.filesSkipped.Add(1)
	rs.prog.bytesSkipped.Add(int64(size))
	rs.mu.Lock()
	rs.result.FilesSkipped++
	rs.result.BytesSkipped += int64(size)
	rs.mu.Unlock()
	var damage *damageError
	if errors.As(err, &damage) {
		rs.damaged(p, damage.err)
		return
	}
	rs.skip(p, err.Error())
}

// walkOptions are the filters of the restore, for repo.Walk.
func (rs *restorer) walkOptions() repo.WalkOptions {
	return repo.WalkOptions{Include: rs.opts.Include, Exclude: rs.opts.Exclude}
}

// targetOf is where the entry at snapshot path p is restored: its name
// below the target, with "/" between its elements, as FS takes it.
func (rs *restorer) targetOf(p string) string { return strings.TrimPrefix(localPath(p), "/") }

// walk restores tree id, the snapshot's root, into the target: it creates
// folders as the walker meets them (each exists and is a real folder, not
// a symlink, before anything is made in it; with include rules, only once
// something below it is restored), queues files for the workers and makes
// the other entries. A tree that cannot be read is reported as damage and
// the walk goes on beside it, unless the storage failed (storageFailed).
func (rs *restorer) walk(ctx context.Context, id repo.ID, links *[]deferredLink) error {
	return rs.r.Walk(ctx, id, rs.walkOptions(), repo.WalkVisitor{
		TreeError: func(dir *repo.WalkEntry, _ repo.ID, err error) error {
			if rs.storageFailed(dir.Path, err) {
				return err
			}
			rs.mu.Lock()
			rs.unreadable[dir.Path] = true
			rs.mu.Unlock()
			rs.damaged(dir.Path, fmt.Errorf("folder's content cannot be read: %w", err))
			return nil
		},
		Node: func(e *repo.WalkEntry) error {
			if e.Unsafe {
				rs.skip(e.Path, "unsafe name in the snapshot: not restored")
				return nil
			}
			node := e.Node
			if reason := refusedName(e.Path); reason != "" {
				switch node.Type {
				case repo.NodeDir:
					rs.skip(e.Path, reason)
					return repo.SkipTree
				case repo.NodeFile:
					rs.fileFailed(e.Path, node.Size, errors.New(reason))
				default:
					rs.skip(e.Path, reason)
				}
				return nil
			}
			parent := rs.parentOf(e.Path)
			if parent.failed {
				// Not made: the folder's skip stands for all below it.
				return repo.SkipTree
			}
			if node.Type == repo.NodeDir {
				return rs.enterFolder(e, parent)
			}
			if !rs.makeFolders() {
				return nil
			}
			target := rs.targetOf(e.Path)
			switch node.Type {
			case repo.NodeFile:
				if node.Links > 1 {
					key := inode{node.Device, node.Inode}
					if rs.linkFirst[key] {
						*links = append(*links, deferredLink{target: target, shown: e.Path, node: *node})
						return nil
					}
					rs.linkFirst[key] = true
				}
				return rs.queueFile(ctx, restoreFile{node: *node, target: target, shown: e.Path})
			default:
				rs.restoreSpecial(*node, target, e.Path)
			}
			return nil
		},
	})
}

// parentOf returns the folder that holds the entry at snapshot path p,
// leaving the folders the walk is done with.
func (rs *restorer) parentOf(p string) *folder {
	for len(rs.folders) > 1 && !strings.HasPrefix(p, rs.folders[len(rs.folders)-1].path+"/") {
		rs.folders = rs.folders[:len(rs.folders)-1]
	}
	return rs.folders[len(rs.folders)-1]
}

// enterFolder handles the folder e in parent: it is made now when the
// include rules select it, else when the first entry below it is
// restored.
func (rs *restorer) enterFolder(e *repo.WalkEntry, parent *folder) error {
	f := &folder{path: e.Path, node: *e.Node,
		selected: parent.selected || rs.opts.Include == nil || rs.opts.Include.Match(e.Path)}
	rs.folders = append(rs.folders, f)
	if f.selected && !rs.makeFolders() {
		return repo.SkipTree
	}
	if e.Node.Subtree == nil {
		rs.skip(e.Path, "folder without content in the snapshot")
	}
	return nil
}

// makeFolders makes the folders on the walk's path that are not made yet,
// outermost first. It returns false when one cannot be made, which is
// then reported (once) with what is below it.
func (rs *restorer) makeFolders() bool {
	for _, f := range rs.folders {
		if f.failed {
			return false
		}
		if f.made {
			continue
		}
		if err := rs.makeDir(rs.targetOf(f.path)); err != nil {
			f.failed = true
			rs.skip(f.path, err.Error())
			return false
		}
		f.made = true
		rs.markRestored(f.path)
		rs.dirs = append(rs.dirs, dirMeta{node: f.node, target: rs.targetOf(f.path), shown: f.path})
		rs.mu.Lock()
		rs.result.Dirs++
		rs.mu.Unlock()
	}
	return true
}

// makeDir creates a folder, or accepts an existing real folder. It refuses
// a symlink or anything else in the way.
func (rs *restorer) makeDir(target string) error {
	err := rs.fs.Mkdir(rs.root, target, 0o700)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := rs.fs.Lstat(rs.root, target)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return errors.New("a symlink is in the way of a folder: not followed")
	}
	if !fi.IsDir() {
		return errors.New("something that is not a folder is in the way")
	}
	return nil
}

func tempName(target string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return path.Join(path.Dir(target), ".nightjar-restore-"+hex.EncodeToString(b[:]))
}

// place renames a finished temporary entry to its final name, unless
// something is there and Overwrite is off. A folder is never replaced.
func (rs *restorer) place(tmp, target string) error {
	if r, ok := rs.fs.(exclusiveRenamer); ok && !rs.opts.Overwrite {
		// One call where the file system can: the common case, nothing
		// in the way, needs no Lstat first.
		err := r.RenameExclusive(rs.root, tmp, target)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrExist) && !errors.Is(err, errors.ErrUnsupported):
			rs.fs.Remove(rs.root, tmp)
			return err
		}
		// Something is in the way (below: what), or the file system
		// cannot rename exclusively.
	}
	if err := rs.inTheWay(target); err != nil {
		rs.fs.Remove(rs.root, tmp)
		return err
	}
	if err := rs.fs.Rename(rs.root, tmp, target); err != nil {
		rs.fs.Remove(rs.root, tmp)
		return err
	}
	return nil
}

// inTheWay says why what is at target is not replaced: a folder never is,
// anything else only with Overwrite.
func (rs *restorer) inTheWay(target string) error {
	fi, err := rs.fs.Lstat(rs.root, target)
	switch {
	case err != nil:
		return nil
	case fi.IsDir():
		return errors.New("a folder is in the way: not replaced")
	case !rs.opts.Overwrite:
		return errors.New("exists (use --overwrite to replace it)")
	}
	return nil
}

// canNameUnnamed makes one file with no name in the target and names it
// (a temporary name, removed at once): whether the target's file system
// makes such files (O_TMPFILE) and this process can name them (linkat
// with AT_EMPTY_PATH, or through /proc) is known before any file is
// written, not after each.
func (rs *restorer) canNameUnnamed() bool {
	u, ok := rs.fs.(unnamedCreator)
	if !ok {
		return false
	}
	probe := tempName("probe")
	f, err := u.CreateUnnamed(rs.root, probe)
	if err != nil {
		return false
	}
	err = u.LinkUnnamed(rs.root, probe, f)
	f.Close()
	if err != nil {
		return false
	}
	rs.fs.Remove(rs.root, probe)
	return true
}

// linkUnnamed gives a complete file with no name its name, unless
// something is there, and closes it.
func (rs *restorer) linkUnnamed(f *pendingFile) error {
	err := rs.fs.(unnamedCreator).LinkUnnamed(rs.root, f.target, f.out)
	closeErr := f.out.Close()
	switch {
	case errors.Is(err, fs.ErrExist):
		if why := rs.inTheWay(f.target); why != nil {
			return why
		}
		return err
	case err != nil:
		return err
	case closeErr != nil:
		// Named already: what close reports (a write-back error on some
		// file systems) makes the file not restored.
		if err := rs.fs.Remove(rs.root, f.target); err != nil {
			return fmt.Errorf("%w, and the file could not be removed: %w", closeErr, err)
		}
		return closeErr
	}
	return nil
}

// queueFile hands a regular file to the file workers, in parts if it is
// large.
func (rs *restorer) queueFile(ctx context.Context, f restoreFile) error {
	pf := &pendingFile{restoreFile: f}
	if held, err := rs.queueByPack(ctx, pf); held || err != nil {
		return err
	}
	parts := rs.split(pf)
	pf.parts.Store(int32(len(parts)))
	for _, p := range parts {
		select {
		case rs.parts <- p:
		case <-ctx.Done():
			// The parts not handed over are finished here, so that the
			// last one still removes the temporary file.
			rs.finishPart(ctx, p, ctx.Err())
		}
	}
	return ctx.Err()
}

// split cuts a file's content into parts of at most partChunks chunks. The
// offsets come from the index; a file with a chunk the index lacks stays
// whole, and restoring it reports the missing blob.
func (rs *restorer) split(f *pendingFile) []filePart {
	content := f.node.Content
	if len(content) <= partChunks {
		return []filePart{{file: f, end: len(content)}}
	}
	var parts []filePart
	var offset int64
	for first := 0; first < len(content); first += partChunks {
		end := min(first+partChunks, len(content))
		parts = append(parts, filePart{file: f, first: first, end: end, offset: offset})
		for _, id := range content[first:end] {
			b, ok := rs.r.Index().Lookup(id)
			if !ok {
				return []filePart{{file: f, end: len(content)}}
			}
			offset += int64(b.RawLength)
		}
	}
	return parts
}

func (rs *restorer) fileWorker(ctx context.Context) {
	defer rs.fileWG.Done()
	var buf repo.BlobBuffer
	var stage stagingBuffer
	for p := range rs.parts {
		if p.job != nil {
			rs.runPackJob(ctx, p.job, &buf)
			continue
		}
		rs.finishPart(ctx, p, rs.writePart(ctx, p, &buf, &stage))
	}
}

// damageError is damage in the repository met while restoring a file:
// the file is not restored, and the restore ends with a DamagedError.
type damageError struct{ err error }

func (e *damageError) Error() string { return e.err.Error() }
func (e *damageError) Unwrap() error { return e.err }

// writeError carries an error of writing the target out of a blob read
// (LoadBlobsInOrder), so that it is not taken for damage.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// writePart writes one part's chunks into the file's temporary file, which
// the first part to start creates. Runs of zeros become holes, so that a
// sparse file stays sparse. Big files go through stage to direct writes.
func (rs *restorer) writePart(ctx context.Context, p filePart, buf *repo.BlobBuffer, stage *stagingBuffer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f := p.file
	if f.failed() {
		return nil // the file is given up already
	}
	if err := rs.openFile(f, true); err != nil {
		return err // the file is skipped with it (finishPart)
	}
	if f.out == nil {
		return nil // another part failed to create it, and reported why
	}
	var direct *directio.Writer
	if f.direct != nil {
		direct = directio.NewWriter(f.out, f.direct, stage.get(), &f.writing)
	}
	offset := p.offset
	// The part's blobs come in order, those that lie together in a pack
	// with one read (one request on object storage).
	err := rs.r.LoadBlobsInOrder(ctx, f.node.Content[p.first:p.end], buf, func(_ int, data []byte) error {
		// A part read pack by pack may come whole from memory, up to a
		// pack's bytes: a cancelled restore stops at the next chunk.
		if err := ctx.Err(); err != nil {
			return &writeError{err}
		}
		var err error
		switch {
		case isZero(data):
			// A hole: what is staged before it goes out now.
			f.holes.Store(true)
			if direct != nil {
				err = direct.Flush()
			}
		case direct != nil:
			err = direct.Stage(offset, data)
		default:
			f.writing.Lock()
			_, err = f.out.WriteAt(data, offset)
			f.writing.Unlock()
		}
		if err != nil {
			return &writeError{err}
		}
		offset += int64(len(data))
		rs.prog.bytesDone.Add(int64(len(data)))
		return nil
	})
	var local *writeError
	switch {
	case errors.As(err, &local):
		return local.err // a local error, reported as such
	case rs.storageFailed(f.shown, err):
		return err // the restore stops: the file is removed, not reported
	case err != nil:
		return &damageError{err}
	}
	if direct != nil {
		if err := direct.Flush(); err != nil {
			return err
		}
	}
	f.written.Add(offset - p.offset)
	return nil
}

// openFile creates f's file, once, whichever part comes first: with no
// name where the FS can and nothing is to be replaced (a name cannot be
// linked over an entry), else under a temporary name; a big file is
// opened for direct writes too where direct allows. The error is the
// creation's, returned to the part that tried.
func (rs *restorer) openFile(f *pendingFile, direct bool) error {
	var err error
	f.open.Do(func() {
		if !rs.noUnnamed.Load() {
			var u UnnamedFile
			u, err = rs.fs.(unnamedCreator).CreateUnnamed(rs.root, f.target)
			switch {
			case errors.Is(err, errors.ErrUnsupported):
				rs.noUnnamed.Store(true)
			case err != nil:
				return
			default:
				f.out, f.meta = u, u
			}
		}
		name := f.target
		if f.out == nil {
			f.tmp = tempName(f.target)
			name = f.tmp
			f.out, err = rs.fs.CreateExclusive(rs.root, f.tmp)
			// The metadata goes through the open descriptor where the
			// File takes it: four system calls that look up no name,
			// where by name each looked the file up in its folder again.
			if m, ok := f.out.(metaSetter); ok && rs.ownCalls {
				f.meta = m
			}
		}
		if err == nil && direct && f.node.Size >= directMinSize {
			f.direct = rs.fs.OpenDirect(rs.root, name, f.out)
		}
	})
	return err
}

func (f *pendingFile) failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err != nil
}

// finishPart records how a part ended; after the file's last part it
// finishes the file and reports the outcome: a file that failed is
// skipped with its reason, unless the restore was cancelled (which Run
// returns).
func (rs *restorer) finishPart(ctx context.Context, p filePart, err error) {
	f := p.file
	if err != nil {
		f.mu.Lock()
		// The first error wins, except that damage to the repository
		// outranks a local one (a full disk in another part): damage
		// is what the file reports, and what the restore counts.
		var damaged *damageError
		if f.err == nil || (errors.As(err, &damaged) && !errors.As(f.err, &damaged)) {
			f.err = err
		}
		f.mu.Unlock()
	}
	if f.parts.Add(-1) > 0 {
		return
	}
	err = rs.finishFile(f)
	if err == nil || ctx.Err() != nil {
		return
	}
	rs.fileFailed(f.shown, f.node.Size, err)
}

// finishFile puts a file whose parts are all written in place with its
// metadata, or removes its temporary file if a part failed.
func (rs *restorer) finishFile(f *pendingFile) error {
	rs.prog.filesDone.Add(1)
	if f.direct != nil {
		// Direct writes are complete when WriteAt returns; closing
		// reports nothing more.
		f.direct.Close()
	}
	discard := func() {
		f.out.Close()
		if f.tmp != "" {
			rs.fs.Remove(rs.root, f.tmp)
		}
	}
	if f.err != nil {
		if f.out != nil {
			discard()
		}
		return f.err
	}
	written := f.written.Load()
	// Where every chunk was written the file has its size already; a
	// hole (a chunk of zeros not written) may be at its end, and direct
	// writes are checked here too. A truncate to the same size is still
	// a change of the inode on a journaling file system.
	if f.holes.Load() || f.direct != nil {
		if err := f.out.Truncate(written); err != nil {
			discard()
			return err
		}
	}
	if written != int64(f.node.Size) {
		discard()
		return &damageError{fmt.Errorf("content is %d bytes, snapshot says %d: %w", written, f.node.Size, repo.ErrIntegrity)}
	}
	// Through the descriptor, after the last write (for the times).
	if f.meta != nil {
		if err := rs.setMeta(f.meta, &f.node); err != nil {
			discard()
			return fmt.Errorf("metadata: %w", err)
		}
	}
	if f.tmp == "" {
		if err := rs.linkUnnamed(f); err != nil {
			return err
		}
	} else {
		if err := f.out.Close(); err != nil {
			rs.fs.Remove(rs.root, f.tmp)
			return err
		}
		if f.meta == nil {
			if err := rs.setMeta(rs.pathMeta(f.tmp), &f.node); err != nil {
				rs.fs.Remove(rs.root, f.tmp)
				return fmt.Errorf("metadata: %w", err)
			}
		}
		if err := rs.place(f.tmp, f.target); err != nil {
			return err
		}
	}
	rs.mu.Lock()
	rs.result.Files++
	rs.result.Bytes += written
	rs.mu.Unlock()
	rs.markRestored(f.shown)
	if f.node.Links > 1 {
		rs.recordPlaced(f.restoreFile)
	}
	return nil
}

// restoreWhole restores one file in the calling goroutine.
func (rs *restorer) restoreWhole(ctx context.Context, f restoreFile) error {
	pf := &pendingFile{restoreFile: f}
	var buf repo.BlobBuffer
	var stage stagingBuffer
	if err := rs.writePart(ctx, filePart{file: pf, end: len(f.node.Content)}, &buf, &stage); err != nil {
		pf.err = err
	}
	return rs.finishFile(pf)
}

// recordPlaced notes a restored hardlinked file, by the device and inode
// it has now, for the other names of its inode.
func (rs *restorer) recordPlaced(f restoreFile) {
	fi, err := rs.fs.Lstat(rs.root, f.target)
	if err != nil {
		return
	}
	// Windows reads a file's identity when os.SameFile first asks for it:
	// ask now, while the name holds the file placed.
	sameFile(fi, fi)
	rs.mu.Lock()
	rs.placed[inode{f.node.Device, f.node.Inode}] = placedFile{path: f.target, info: fi}
	rs.mu.Unlock()
}

func isZero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// restoreLink makes a later name of a hardlinked inode: a link to the file
// restore placed for its first name, after checking that this is still the
// regular file restore wrote. If the first name was not restored (it was
// skipped, or something replaced it), the name is restored as a file of
// its own, which later names then link to. A name that cannot be made is
// skipped with its reason.
func (rs *restorer) restoreLink(ctx context.Context, l deferredLink) {
	key := inode{l.node.Device, l.node.Inode}
	first, ok := rs.placed[key]
	var now fs.FileInfo
	if ok {
		now, _ = rs.fs.Lstat(rs.root, first.path)
	}
	if now != nil && now.Mode().IsRegular() && sameFile(now, first.info) {
		tmp := tempName(l.target)
		if err := rs.fs.Link(rs.root, first.path, tmp); err != nil {
			rs.fileFailed(l.shown, l.node.Size, fmt.Errorf("hardlink: %w", err))
			return
		}
		if err := rs.place(tmp, l.target); err != nil {
			rs.fileFailed(l.shown, l.node.Size, err)
			return
		}
		rs.mu.Lock()
		rs.result.Files++
		rs.mu.Unlock()
		rs.prog.filesDone.Add(1)
		rs.prog.bytesDone.Add(int64(l.node.Size))
		rs.markRestored(l.shown)
		return
	}
	if err := rs.restoreWhole(ctx, restoreFile{node: l.node, target: l.target, shown: l.shown}); err != nil && ctx.Err() == nil {
		rs.fileFailed(l.shown, l.node.Size, err)
	}
}

func (rs *restorer) restoreSpecial(node repo.Node, target, shown string) {
	tmp := tempName(target)
	var err error
	switch node.Type {
	case repo.NodeSymlink:
		err = rs.fs.Symlink(rs.root, node.LinkTarget, tmp)
	case repo.NodeFIFO:
		err = rs.fs.Mknod(rs.root, tmp, syscall.S_IFIFO|0o600, 0)
	case repo.NodeCharDev, repo.NodeBlockDev:
		if !rs.asRoot {
			rs.skip(shown, "device nodes can only be made by root: not restored")
			return
		}
		mode := uint32(syscall.S_IFCHR)
		if node.Type == repo.NodeBlockDev {
			mode = syscall.S_IFBLK
		}
		err = rs.fs.Mknod(rs.root, tmp, mode|0o600, int(node.Rdev))
	case repo.NodeSocket:
		rs.skip(shown, "sockets belong to the program that made them: not restored")
		return
	default:
		rs.skip(shown, fmt.Sprintf("unknown entry type %q: not restored", node.Type))
		return
	}
	if err != nil {
		if !rs.lacking(err) {
			rs.skip(shown, err.Error())
		}
		return
	}
	if err := rs.setMeta(rs.pathMeta(tmp), &node); err != nil {
		rs.fs.Remove(rs.root, tmp)
		rs.skip(shown, "metadata: "+err.Error())
		return
	}
	if err := rs.place(tmp, target); err != nil {
		rs.skip(shown, err.Error())
		return
	}
	rs.mu.Lock()
	rs.result.Others++
	rs.mu.Unlock()
}

// setMeta applies owner (as root), mode, extended attributes and times
// through m, which follows no symlink.
func (rs *restorer) setMeta(m metaSetter, node *repo.Node) error {
	if rs.asRoot {
		if err := m.Chown(int(node.UID), int(node.GID)); err != nil {
			return fmt.Errorf("owner: %w", err)
		}
	}
	for _, x := range node.Xattrs {
		if err := m.Setxattr(x.Name, x.Value); err != nil {
			// An attribute the target cannot take costs the attribute, never
			// the file: it is counted and named once (a Lack), as a
			// platform's missing feature is.
			switch {
			case rs.lacking(err):
			case errors.Is(err, syscall.EPERM) && !rs.asRoot:
				rs.lacking(&lackError{what: "extended attributes that need root",
					reason: "only root may set them (" + x.Name + " was the first met)"})
			case errors.Is(err, syscall.ENOTSUP), errors.Is(err, syscall.EOPNOTSUPP):
				rs.lacking(&lackError{what: "extended attributes the target does not take",
					reason: "its file system or this system has no such attribute namespace (" + x.Name + " was the first met)"})
			default:
				return fmt.Errorf("extended attribute %s: %w", x.Name, err)
			}
		}
	}
	if node.Type != repo.NodeSymlink {
		// After chown, which clears setuid and setgid.
		if err := m.Chmod(node.Mode & 0o7777); err != nil {
			return fmt.Errorf("mode: %w", err)
		}
	}
	if err := m.SetMTime(node.MTime); err != nil {
		return fmt.Errorf("times: %w", err)
	}
	return nil
}

// pathMeta sets the metadata of the entry p below the target by its name.
func (rs *restorer) pathMeta(p string) metaSetter { return pathMeta{fs: rs.fs, root: rs.root, name: p} }

// verify reads back every file the restore put in place and compares it,
// blob by blob, with the IDs in the snapshot, which the walker gives. It
// goes into no folder the restore did not make (one it refused, such as a
// symlink in the way, holds nothing it restored) and reads through no
// symlink in the target (FS.OpenBeneath).
func (rs *restorer) verify(ctx context.Context, id repo.ID) error {
	var failures []repo.Skip
	err := rs.r.Walk(ctx, id, rs.walkOptions(), repo.WalkVisitor{TreeError: func(dir *repo.WalkEntry, _ repo.ID, err error) error {
		if rs.storageFailed(dir.Path, err) {
			return err
		}
		if rs.unreadable[dir.Path] {
			return nil // reported by the restore, nothing below it restored
		}
		return fmt.Errorf("%s: %w", dir.Path, err)
	}, Node: func(e *repo.WalkEntry) error {
		switch {
		case e.Unsafe:
			return nil // never restored; its quoted path may look like a real one
		case !rs.restored[e.Path]:
			if e.Node.Type == repo.NodeDir {
				return repo.SkipTree
			}
			return nil
		case e.Node.Type != repo.NodeFile:
			return nil
		}
		if err := rs.verifyFile(e.Path, e.Node); err != nil {
			failures = append(failures, repo.Skip{Path: e.Path, Reason: err.Error()})
			return nil
		}
		rs.result.Verified++
		rs.result.BytesVerified += int64(e.Node.Size)
		rs.prog.filesVerified.Add(1)
		rs.prog.bytesVerified.Add(int64(e.Node.Size))
		return nil
	}})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	rs.result.VerifyFailures = failures
	if len(failures) > 0 {
		return fmt.Errorf("%w: %d files", ErrVerifyFailed, len(failures))
	}
	return nil
}

// verifyFile compares the restored file at snapshot path p with node.
func (rs *restorer) verifyFile(p string, node *repo.Node) error {
	f, err := rs.fs.OpenBeneath(rs.root, strings.TrimPrefix(localPath(p), "/"))
	if err != nil {
		return err
	}
	defer f.Close()
	var buf []byte
	for i, id := range node.Content {
		b, ok := rs.r.Index().Lookup(id)
		if !ok {
			return fmt.Errorf("blob %s is not in the index", id.Short())
		}
		if cap(buf) < int(b.RawLength) {
			buf = make([]byte, b.RawLength)
		}
		buf = buf[:b.RawLength]
		if _, err := io.ReadFull(f, buf); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		if rs.r.BlobID(buf) != id {
			return fmt.Errorf("chunk %d differs from the repository", i)
		}
	}
	var one [1]byte
	if n, _ := f.Read(one[:]); n > 0 {
		return errors.New("file is longer than in the snapshot")
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.ModTime().Equal(node.MTime.Truncate(mtimeResolution)) {
		return fmt.Errorf("mtime is %s, snapshot says %s", fi.ModTime().Format(time.RFC3339Nano), node.MTime.Format(time.RFC3339Nano))
	}
	return nil
}
