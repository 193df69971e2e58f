package cmd

import (
	"archive/tar"
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

func dumpCommand() *cli.Command {
	return &cli.Command{
		Name:  "dump",
		Usage: "write a file of a snapshot to stdout, or a folder as a tar or zip archive",
		Description: "A file is written exactly as it was backed up. A folder is written as an archive\n" +
			"(tar by default) whose entries are named by their paths in the snapshot, without\n" +
			"the leading slash; an archive is never written to a terminal.",
		ArgsUsage: "SNAPSHOT PATH",
		Flags: append(append(readRepoFlags(),
			&cli.StringFlag{Name: "archive", Value: "tar", Usage: "archive `FORMAT` of a folder: tar or zip"},
			&cli.StringFlag{Name: "target", Usage: "write to `FILE` instead of stdout"},
		), snapshotFilterFlags()...),
		Action: runDump,
	}
}

func runDump(c *cli.Context) (err error) {
	p := newPrinter(c)
	if c.NArg() != 2 {
		return usageError{errors.New("dump needs SNAPSHOT and PATH (a file or folder in the snapshot)")}
	}
	format := c.String("archive")
	if format != "tar" && format != "zip" {
		return usageError{fmt.Errorf("--archive %q: want tar or zip", format)}
	}
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	lock, err := readLockRepo(c, p, r, "dump")
	if err != nil {
		return err
	}
	defer lock.Release(&err)
	if err := r.LoadIndex(c.Context); err != nil {
		return err
	}
	snap, err := findSnapshot(c.Context, r, c.Args().Get(0), snapshotFilterFrom(c))
	if err != nil {
		return err
	}
	at := path.Clean("/" + c.Args().Get(1))
	node, err := r.NodeAt(c.Context, snap.Tree, at)
	if errors.Is(err, repo.ErrPathNotFound) {
		return fmt.Errorf("%s is not in snapshot %s", terminalSafe(at), shortID(snap.ID))
	}
	if err != nil {
		return err
	}
	if node.Type != repo.NodeFile && node.Type != repo.NodeDir {
		return usageError{fmt.Errorf("%s is a %s: dump writes files and folders", terminalSafe(at), node.Type)}
	}
	target := c.String("target")
	if node.Type == repo.NodeDir && target == "" && isTerminal(p.stdout) {
		return usageError{fmt.Errorf("%s is a folder: its %s archive is not written to a terminal; redirect stdout or give --target FILE", terminalSafe(at), format)}
	}
	out, finish, err := dumpOutput(p, target)
	if err != nil {
		return err
	}
	if node.Type == repo.NodeFile {
		err = dumpFile(c.Context, r, node, at, out)
	} else {
		err = dumpFolder(c.Context, r, p, node, at, format, out)
	}
	if err = finish(err); err != nil {
		return fmt.Errorf("dump %s: %w", terminalSafe(at), err)
	}
	return nil
}

// dumpOutput returns where dump writes: stdout, or the file target. finish
// ends the output after the dump ended with err and returns the error to
// report; a target file that was not written whole is removed.
func dumpOutput(p *printer, target string) (io.Writer, func(err error) error, error) {
	if target == "" {
		return p.stdout, func(err error) error { return err }, nil
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open --target: %w", err)
	}
	return f, func(err error) error {
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(target)
		}
		return err
	}, nil
}

// dumpFile writes the content of the file node, checked against its size.
func dumpFile(ctx context.Context, r *repo.Repository, n *repo.Node, at string, w io.Writer) error {
	var buf repo.BlobBuffer
	var written uint64
	for _, id := range n.Content {
		data, err := r.LoadBlobTo(ctx, id, &buf)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
		written += uint64(len(data))
	}
	if written != n.Size {
		return fmt.Errorf("%s: its content is %d bytes, the snapshot says %d: %w", terminalSafe(at), written, n.Size, repo.ErrIntegrity)
	}
	return nil
}

// archiver writes the entries of a folder into an archive.
type archiver interface {
	// add writes the entry n named name; for a file, content writes its
	// data. ok is false for an entry the archive cannot hold.
	add(name string, n *repo.Node, content func(io.Writer) error) (ok bool, err error)
	Close() error
}

// dumpFolder writes the folder node at path at, and everything below it,
// as an archive. Entries the archive cannot hold are named in warnings
// and counted.
func dumpFolder(ctx context.Context, r *repo.Repository, p *printer, n *repo.Node, at, format string, w io.Writer) error {
	var a archiver = &tarArchive{tar.NewWriter(w)}
	if format == "zip" {
		a = &zipArchive{zip.NewWriter(w)}
	}
	prefix := strings.TrimPrefix(at, "/") // entry names: their snapshot paths without the leading slash
	left := 0
	add := func(name, shown string, n *repo.Node) error {
		ok, err := a.add(name, n, func(w io.Writer) error { return dumpFile(ctx, r, n, shown, w) })
		if !ok && err == nil {
			left++
			p.Warnf("%s not in the archive: %s cannot hold a %s", terminalSafe(shown), format, n.Type)
		}
		return err
	}
	if prefix != "" {
		if err := add(prefix, at, n); err != nil {
			return err
		}
	}
	err := r.Walk(ctx, *n.Subtree, repo.WalkOptions{}, repo.WalkVisitor{Node: func(e *repo.WalkEntry) error {
		shown := strings.TrimSuffix(at, "/") + e.Path
		if e.Unsafe {
			left++
			p.Warnf("%s not in the archive: its name is not a valid file name", terminalSafe(shown))
			return nil
		}
		return add(strings.TrimPrefix(shown, "/"), shown, e.Node)
	}})
	if err != nil {
		return err
	}
	if err := a.Close(); err != nil {
		return err
	}
	if left > 0 {
		p.Warnf("%d entries were left out of the archive (named above)", left)
	}
	return nil
}

// tarArchive writes a POSIX (PAX) tar stream: modes, owners, times to the
// nanosecond, symlinks, FIFOs and extended attributes.
type tarArchive struct{ w *tar.Writer }

func (a *tarArchive) add(name string, n *repo.Node, content func(io.Writer) error) (bool, error) {
	h := &tar.Header{Name: name, Mode: int64(n.Mode & 0o7777), ModTime: n.MTime, Uid: int(n.UID), Gid: int(n.GID),
		Uname: n.User, Gname: n.Group, Format: tar.FormatPAX}
	switch n.Type {
	case repo.NodeDir:
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
	case repo.NodeFile:
		h.Typeflag, h.Size = tar.TypeReg, int64(n.Size)
	case repo.NodeSymlink:
		h.Typeflag, h.Linkname = tar.TypeSymlink, n.LinkTarget
	case repo.NodeFIFO:
		h.Typeflag = tar.TypeFifo
	default:
		return false, nil
	}
	for _, x := range n.Xattrs {
		if h.PAXRecords == nil {
			h.PAXRecords = map[string]string{}
		}
		h.PAXRecords["SCHILY.xattr."+x.Name] = string(x.Value)
	}
	if err := a.w.WriteHeader(h); err != nil {
		return false, err
	}
	if n.Type == repo.NodeFile {
		return true, content(a.w)
	}
	return true, nil
}

func (a *tarArchive) Close() error { return a.w.Close() }

// zipArchive writes a zip archive: modes, modification times and symlinks
// (as zip tools store them: the target as the entry's data). Owners and
// extended attributes have no place in it.
type zipArchive struct{ w *zip.Writer }

func (a *zipArchive) add(name string, n *repo.Node, content func(io.Writer) error) (bool, error) {
	h := &zip.FileHeader{Name: name, Modified: n.MTime, Method: zip.Deflate}
	perm := fs.FileMode(n.Mode & 0o777)
	switch n.Type {
	case repo.NodeDir:
		h.Name, h.Method = name+"/", zip.Store
		h.SetMode(fs.ModeDir | perm)
	case repo.NodeFile:
		h.SetMode(perm)
	case repo.NodeSymlink:
		h.Method = zip.Store
		h.SetMode(fs.ModeSymlink | perm)
	default:
		return false, nil
	}
	w, err := a.w.CreateHeader(h)
	if err != nil {
		return false, err
	}
	switch n.Type {
	case repo.NodeFile:
		return true, content(w)
	case repo.NodeSymlink:
		_, err = io.WriteString(w, n.LinkTarget)
	}
	return true, err
}

func (a *zipArchive) Close() error { return a.w.Close() }
