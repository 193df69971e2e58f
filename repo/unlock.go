package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
)

// LockState is one lock object of a repository and what RemoveLocks did
// with it.
type LockState struct {
	Name    string
	Info    LockInfo // zero when its content cannot be read (InfoErr)
	InfoErr error
	Alive   bool // its holder still holds it (by the storage's lock protocol)
	// OtherHost: the protocol finds it dead, but it was taken on another
	// host (or its host cannot be read), where this process cannot tell
	// whether its holder is gone: the lock is kept.
	OtherHost bool
	Removed   bool
}

// RemoveLocks removes the lock objects whose holder is provably gone: taken
// on this host, and dead by the storage's lock protocol
// (LockKeeper.LockAlive: on a local folder, no process holds the lock's
// flock any more, which the kernel drops when its holder ends, whatever its
// age). It keeps the others, also a lock the protocol finds dead that was
// taken on another host (a flock may not reach across hosts on every
// network file system). With all set it removes every lock, also those of
// live processes: their work then goes on unprotected. It takes no lock
// itself. It returns every lock it saw, sorted by name; a lock that
// vanished while it looked is left out.
func (r *Repository) RemoveLocks(ctx context.Context, all bool) ([]LockState, error) {
	host, err := os.Hostname()
	if err != nil && !all {
		return nil, fmt.Errorf("remove locks: this host's name: %w", err)
	}
	keeper, ok := r.lockKeeper()
	if !ok && !all {
		return nil, r.cannotLock()
	}
	var names []string
	if err := r.be.List(ctx, LockFile, func(name string, _ int64) error {
		names = append(names, name)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list locks: %w", err)
	}
	sort.Strings(names)
	var states []LockState
	for _, name := range names {
		h := Handle{Type: LockFile, Name: name}
		load := sync.OnceValues(func() (LockInfo, error) { return r.readLock(ctx, name) })
		st := LockState{Name: name}
		if keeper != nil {
			alive, err := keeper.LockAlive(ctx, h, load)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return states, fmt.Errorf("lock %s: %w", name, err)
			}
			st.Alive = alive
		}
		st.Info, st.InfoErr = load()
		if errors.Is(st.InfoErr, ErrNotFound) {
			continue
		}
		st.OtherHost = !st.Alive && (st.InfoErr != nil || st.Info.Hostname != host)
		if (st.Alive || st.OtherHost) && !all {
			states = append(states, st)
			continue
		}
		err := r.be.Remove(ctx, h)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return states, fmt.Errorf("remove lock %s: %w", name, err)
		}
		st.Removed = true
		states = append(states, st)
	}
	return states, nil
}

// ReadLock reads the content of the lock object name.
func (r *Repository) ReadLock(ctx context.Context, name string) (LockInfo, error) {
	return r.readLock(ctx, name)
}
