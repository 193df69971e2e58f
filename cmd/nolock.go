package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

// noLockFlag is taken by the commands that only read a repository
// (restic's flag): they then write no lock, so that a repository on
// read-only media can be read. A prune running meanwhile could remove what
// they read.
func noLockFlag() cli.Flag {
	return &cli.BoolFlag{Name: "no-lock", Usage: "do not lock the repository (it may be on read-only media); a prune running meanwhile could remove what is read"}
}

// readRepoFlags are the flags of a command that only reads a repository.
func readRepoFlags() []cli.Flag {
	return append(repoFlags(), noLockFlag())
}

// unlocker releases a lock, or nothing where none was taken. Release sets
// *errp, when nil, to the error of a lock lost while it was held (its
// lease ran out, or another process removed it): what the command read
// may have been removed meanwhile by a prune, so it fails, as backup does.
type unlocker interface{ Release(errp *error) }

// readLock is the shared lock of a command that only reads. Only a lost
// lock fails the command: a lock that could not be removed at the end
// (the storage refused the DELETE) is named in a warning, since what was
// read is sound and the next command judges the leftover lock dead.
type readLock struct {
	l *repo.Lock
	p *printer
}

func (r readLock) Release(errp *error) {
	switch err := r.l.Unlock(); {
	case err == nil:
	case errors.Is(err, repo.ErrLockLost):
		if *errp == nil {
			*errp = err
		}
	default:
		r.p.Warnf("could not remove the repository's lock: %v (the next command will judge it dead)", err)
	}
}

// noLock is what a command that runs without a lock holds.
type noLock struct{}

func (noLock) Release(*error) {}

// readLockRepo takes the shared lock of a command that only reads
// (purpose), unless --no-lock says not to. When the lock cannot be written
// because the repository cannot be written at all (read-only media, a full
// disk, no permission), the command goes on without one, with a one-line
// notice: reading needs no write. A busy repository still fails.
func readLockRepo(c *cli.Context, p *printer, r *repo.Repository, purpose string) (unlocker, error) {
	if c.Bool("no-lock") {
		return noLock{}, nil
	}
	l, err := r.Lock(c.Context, false, purpose)
	if err == nil {
		return readLock{l: l, p: p}, nil
	}
	if cannotWrite(err) && c.Context.Err() == nil {
		p.Warnf("the repository cannot be written, so %s goes on without a lock (as with --no-lock; a prune running meanwhile could remove what it reads): %v", purpose, err)
		return noLock{}, nil
	}
	return nil, fmt.Errorf("%w (try again when it is done)", err)
}

// cannotWrite reports whether err says that storage cannot be written at
// all: a read-only file system, a full disk, or writes not permitted.
func cannotWrite(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, fs.ErrPermission)
}
