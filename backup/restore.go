package backup

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
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nightjar-backup/nightjar/backup/filter"
	"github.com/nightjar-backup/nightjar/repo"
)

// RestoreOptions describe one restore.
type RestoreOptions struct {
	Target    string          // folder to restore into; created if missing
	Include   *filter.Matcher // nil: everything
	Exclude   *filter.Matcher // nil: nothing
	Overwrite bool            // replace existing files (never folders)
	Verify    bool            // read back every restored file and compare with the repository
	Workers   int             // 0: GOMAXPROCS
}

// RestoreResult is what a restore did.
type RestoreResult struct {
	Files          int64       `json:"files"`
	Dirs           int64       `json:"dirs"`
	Others         int64       `json:"others"` // symlinks, FIFOs, devices
	Bytes          int64       `json:"bytes"`
	Verified       int64       `json:"files_verified"`
	Skipped        []repo.Skip `json:"skipped,omitempty"`
	OwnershipKept  bool        `json:"ownership_restored"` // false when not run as root
	VerifyFailures []repo.Skip `json:"verify_failures,omitempty"`
}

// ErrVerifyFailed is returned when a restored file differs from the
// repository.
var ErrVerifyFailed = errors.New("restored files differ from the repository")

type restorer struct {
	r      *repo.Repository
	opts   RestoreOptions
	root   string
	asRoot bool
	mu     sync.Mutex
	result RestoreResult
	// Hardlinks: the first name of an inode is restored as a file and
	// recorded in placed once it is in place (with the restored file's own
	// device and inode); the other names are linked to it at the end.
	linkFirst map[devIno]bool
	placed    map[devIno]placedFile
	dirs      []dirMeta // folders whose metadata is set last, deepest first
	fileWG    sync.WaitGroup
	files     chan restoreFile
	errOnce   sync.Once
	err       error
}

type restoreFile struct {
	node   repo.Node
	target string
	shown  string
}

type dirMeta struct {
	node   repo.Node
	target string
}

type deferredLink struct {
	target, shown string
	node          repo.Node
}

// placedFile is a restored file that later names of its inode link to.
type placedFile struct {
	path     string
	dev, ino uint64
}

// Restore writes the tree of snapshot s into opts.Target.
func Restore(ctx context.Context, r *repo.Repository, s *repo.Snapshot, opts RestoreOptions) (*RestoreResult, error) {
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	root, err := filepath.Abs(opts.Target)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("target %s is not a folder", root)
	}
	rs := &restorer{
		r: r, opts: opts, root: root, asRoot: os.Geteuid() == 0,
		linkFirst: map[devIno]bool{},
		placed:    map[devIno]placedFile{},
		files:     make(chan restoreFile, opts.Workers*4),
	}
	rs.result.OwnershipKept = rs.asRoot
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := 0; i < opts.Workers; i++ {
		rs.fileWG.Add(1)
		go rs.fileWorker(ctx, cancel)
	}
	var links []deferredLink
	walkErr := rs.walk(ctx, s.Tree, "/", root, false, &links)
	close(rs.files)
	rs.fileWG.Wait()
	if walkErr != nil {
		return nil, walkErr
	}
	if rs.err != nil {
		return nil, rs.err
	}
	for _, l := range links {
		if err := rs.restoreLink(ctx, l); err != nil {
			return nil, err
		}
	}
	// Folder metadata last, deepest first, so that writing into a folder
	// does not change its mtime afterwards and read-only folders can be
	// filled.
	for i := len(rs.dirs) - 1; i >= 0; i-- {
		d := rs.dirs[i]
		if err := rs.setMeta(d.target, &d.node); err != nil {
			rs.skip(d.target, "metadata: "+err.Error())
		}
	}
	if opts.Verify {
		if err := rs.verify(ctx, s.Tree); err != nil {
			return &rs.result, err
		}
	}
	return &rs.result, nil
}

func (rs *restorer) skip(p, reason string) {
	rs.mu.Lock()
	rs.result.Skipped = append(rs.result.Skipped, repo.Skip{Path: p, Reason: reason})
	rs.mu.Unlock()
}

func (rs *restorer) fail(err error, cancel context.CancelFunc) {
	rs.errOnce.Do(func() {
		rs.err = err
		cancel()
	})
}

// selected tells whether an entry is restored, and whether to descend into
// it in search of included entries.
func (rs *restorer) selected(shown string, included bool) (restore, descend bool) {
	if rs.opts.Exclude != nil && rs.opts.Exclude.Match(shown) {
		return false, false
	}
	if included || rs.opts.Include == nil || rs.opts.Include.Match(shown) {
		return true, true
	}
	return false, rs.opts.Include.ChildMayMatch(shown)
}

// walk restores tree id (shown in the snapshot as shown) into folder dir,
// which exists and is a real folder (not a symlink).
func (rs *restorer) walk(ctx context.Context, id repo.ID, shown, dir string, included bool, links *[]deferredLink) error {
	tree, err := rs.r.LoadTree(ctx, id)
	if err != nil {
		return fmt.Errorf("restore %s: %w", shown, err)
	}
	for _, node := range tree.Nodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !repo.ValidName(node.Name) {
			rs.skip(path.Join(shown, fmt.Sprintf("%q", node.Name)), "unsafe name in the snapshot: not restored")
			continue
		}
		childShown := path.Join(shown, node.Name)
		target := filepath.Join(dir, node.Name)
		restore, descend := rs.selected(childShown, included)
		if !restore && !(descend && node.Type == repo.NodeDir) {
			continue
		}
		switch node.Type {
		case repo.NodeDir:
			if err := rs.makeDir(target); err != nil {
				rs.skip(childShown, err.Error())
				continue
			}
			if node.Subtree == nil {
				rs.skip(childShown, "folder without content in the snapshot")
				continue
			}
			if err := rs.walk(ctx, *node.Subtree, childShown, target, restore, links); err != nil {
				return err
			}
			rs.dirs = append(rs.dirs, dirMeta{node: node, target: target})
			rs.mu.Lock()
			rs.result.Dirs++
			rs.mu.Unlock()
		case repo.NodeFile:
			if node.Links > 1 {
				key := devIno{node.Device, node.Inode}
				if rs.linkFirst[key] {
					*links = append(*links, deferredLink{target: target, shown: childShown, node: node})
					continue
				}
				rs.linkFirst[key] = true
			}
			select {
			case rs.files <- restoreFile{node: node, target: target, shown: childShown}:
			case <-ctx.Done():
				return ctx.Err()
			}
		default:
			rs.restoreSpecial(node, target, childShown)
		}
	}
	return nil
}

// makeDir creates a folder, or accepts an existing real folder. It refuses
// a symlink or anything else in the way.
func (rs *restorer) makeDir(target string) error {
	err := os.Mkdir(target, 0o700)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(target)
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
	return filepath.Join(filepath.Dir(target), ".nightjar-restore-"+hex.EncodeToString(b[:]))
}

// place renames a finished temporary entry to its final name, unless
// something is there and Overwrite is off. A folder is never replaced.
func (rs *restorer) place(tmp, target string) error {
	if fi, err := os.Lstat(target); err == nil {
		switch {
		case fi.IsDir():
			os.Remove(tmp)
			return errors.New("a folder is in the way: not replaced")
		case !rs.opts.Overwrite:
			os.Remove(tmp)
			return errors.New("exists (use --overwrite to replace it)")
		}
	}
	if err := os.Rename(tmp, target); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func (rs *restorer) fileWorker(ctx context.Context, cancel context.CancelFunc) {
	defer rs.fileWG.Done()
	for f := range rs.files {
		if ctx.Err() != nil {
			continue
		}
		err := rs.restoreFile(ctx, f)
		if err == nil {
			continue
		}
		var damaged *damageError
		if errors.As(err, &damaged) || ctx.Err() != nil {
			rs.fail(err, cancel)
			continue
		}
		rs.skip(f.shown, err.Error())
	}
}

// damageError is a repository error: it fails the whole restore.
type damageError struct{ err error }

func (e *damageError) Error() string { return e.err.Error() }
func (e *damageError) Unwrap() error { return e.err }

func (rs *restorer) restoreFile(ctx context.Context, f restoreFile) error {
	tmp := tempName(f.target)
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	var written int64
	for _, id := range f.node.Content {
		data, err := rs.r.LoadBlob(ctx, id)
		if err != nil {
			out.Close()
			os.Remove(tmp)
			return &damageError{fmt.Errorf("restore %s: %w", f.shown, err)}
		}
		// Runs of zeros become holes: a sparse file stays sparse.
		if isZero(data) {
			written += int64(len(data))
			continue
		}
		if _, err := out.WriteAt(data, written); err != nil {
			out.Close()
			os.Remove(tmp)
			return err
		}
		written += int64(len(data))
	}
	if err := out.Truncate(written); err != nil {
		out.Close()
		os.Remove(tmp)
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if written != int64(f.node.Size) {
		os.Remove(tmp)
		return &damageError{fmt.Errorf("restore %s: content is %d bytes, snapshot says %d: %w", f.shown, written, f.node.Size, repo.ErrIntegrity)}
	}
	if err := rs.setMeta(tmp, &f.node); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("metadata: %w", err)
	}
	if err := rs.place(tmp, f.target); err != nil {
		return err
	}
	rs.mu.Lock()
	rs.result.Files++
	rs.result.Bytes += written
	rs.mu.Unlock()
	if f.node.Links > 1 {
		rs.recordPlaced(f)
	}
	return nil
}

// recordPlaced notes a restored hardlinked file, by the device and inode
// it has now, for the other names of its inode.
func (rs *restorer) recordPlaced(f restoreFile) {
	var st unix.Stat_t
	if err := unix.Lstat(f.target, &st); err != nil {
		return
	}
	rs.mu.Lock()
	rs.placed[devIno{f.node.Device, f.node.Inode}] = placedFile{path: f.target, dev: st.Dev, ino: st.Ino}
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
// its own, which later names then link to.
func (rs *restorer) restoreLink(ctx context.Context, l deferredLink) error {
	key := devIno{l.node.Device, l.node.Inode}
	first, ok := rs.placed[key]
	var st unix.Stat_t
	if ok && unix.Lstat(first.path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG &&
		st.Dev == first.dev && st.Ino == first.ino {
		tmp := tempName(l.target)
		if err := os.Link(first.path, tmp); err != nil {
			rs.skip(l.shown, "hardlink: "+err.Error())
			return nil
		}
		if err := rs.place(tmp, l.target); err != nil {
			rs.skip(l.shown, err.Error())
			return nil
		}
		rs.mu.Lock()
		rs.result.Files++
		rs.mu.Unlock()
		return nil
	}
	err := rs.restoreFile(ctx, restoreFile{node: l.node, target: l.target, shown: l.shown})
	var damaged *damageError
	if errors.As(err, &damaged) {
		return err
	}
	if err != nil {
		rs.skip(l.shown, err.Error())
	}
	return nil
}

func (rs *restorer) restoreSpecial(node repo.Node, target, shown string) {
	tmp := tempName(target)
	var err error
	switch node.Type {
	case repo.NodeSymlink:
		err = os.Symlink(node.LinkTarget, tmp)
	case repo.NodeFIFO:
		err = unix.Mkfifo(tmp, 0o600)
	case repo.NodeCharDev, repo.NodeBlockDev:
		if !rs.asRoot {
			rs.skip(shown, "device nodes can only be made by root: not restored")
			return
		}
		mode := uint32(unix.S_IFCHR)
		if node.Type == repo.NodeBlockDev {
			mode = unix.S_IFBLK
		}
		err = unix.Mknod(tmp, mode|0o600, int(node.Rdev))
	case repo.NodeSocket:
		rs.skip(shown, "sockets belong to the program that made them: not restored")
		return
	default:
		rs.skip(shown, fmt.Sprintf("unknown entry type %q: not restored", node.Type))
		return
	}
	if err != nil {
		rs.skip(shown, err.Error())
		return
	}
	if err := rs.setMeta(tmp, &node); err != nil {
		os.Remove(tmp)
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

// setMeta applies owner (as root), mode, extended attributes and times to
// p without following a symlink.
func (rs *restorer) setMeta(p string, node *repo.Node) error {
	if rs.asRoot {
		if err := unix.Lchown(p, int(node.UID), int(node.GID)); err != nil {
			return fmt.Errorf("owner: %w", err)
		}
	}
	for _, x := range node.Xattrs {
		if err := unix.Lsetxattr(p, x.Name, x.Value, 0); err != nil {
			if errors.Is(err, unix.EPERM) && !rs.asRoot {
				return fmt.Errorf("extended attribute %s needs root: %w", x.Name, err)
			}
			return fmt.Errorf("extended attribute %s: %w", x.Name, err)
		}
	}
	if node.Type != repo.NodeSymlink {
		// After chown, which clears setuid and setgid.
		if err := unix.Fchmodat(unix.AT_FDCWD, p, node.Mode&0o7777, 0); err != nil {
			return fmt.Errorf("mode: %w", err)
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(node.MTime.UnixNano()), unix.NsecToTimespec(node.MTime.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("times: %w", err)
	}
	return nil
}

// verify reads back every restored file and compares it, blob by blob,
// with the IDs in the snapshot.
func (rs *restorer) verify(ctx context.Context, id repo.ID) error {
	var failures []repo.Skip
	skipped := map[string]bool{} // not restored: nothing to verify
	for _, s := range rs.result.Skipped {
		skipped[s.Path] = true
	}
	var walk func(id repo.ID, shown, dir string, included bool) error
	walk = func(id repo.ID, shown, dir string, included bool) error {
		tree, err := rs.r.LoadTree(ctx, id)
		if err != nil {
			return err
		}
		for _, node := range tree.Nodes {
			if !repo.ValidName(node.Name) {
				continue
			}
			childShown := path.Join(shown, node.Name)
			target := filepath.Join(dir, node.Name)
			restore, descend := rs.selected(childShown, included)
			switch {
			case node.Type == repo.NodeDir && (restore || descend) && node.Subtree != nil:
				if err := walk(*node.Subtree, childShown, target, restore); err != nil {
					return err
				}
			case node.Type == repo.NodeFile && restore:
				if skipped[childShown] {
					continue
				}
				if err := rs.verifyFile(target, &node); err != nil {
					failures = append(failures, repo.Skip{Path: childShown, Reason: err.Error()})
					continue
				}
				rs.result.Verified++
			}
		}
		return nil
	}
	if err := walk(id, "/", rs.root, false); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	rs.result.VerifyFailures = failures
	if len(failures) > 0 {
		return fmt.Errorf("%w: %d files", ErrVerifyFailed, len(failures))
	}
	return nil
}

func (rs *restorer) verifyFile(target string, node *repo.Node) error {
	f, err := os.OpenFile(target, os.O_RDONLY|unix.O_NOFOLLOW, 0)
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
	if !fi.ModTime().Equal(node.MTime) {
		return fmt.Errorf("mtime is %s, snapshot says %s", fi.ModTime().Format(time.RFC3339Nano), node.MTime.Format(time.RFC3339Nano))
	}
	return nil
}
