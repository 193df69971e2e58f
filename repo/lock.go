package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"
	"sync"
	"time"
)

// LockInfo is the content of a lock object.
type LockInfo struct {
	Exclusive bool      `json:"exclusive"`
	Hostname  string    `json:"hostname"`
	Username  string    `json:"username"`
	PID       int       `json:"pid"`
	Time      time.Time `json:"time"`
	Purpose   string    `json:"purpose"` // the command that holds it: backup, check, ...
	// Refreshed is when a lease protocol (object stores, repo/backend/lease)
	// last saved the lock; a lock held by a process (a local folder's flock)
	// leaves it zero and ignores it.
	Refreshed time.Time `json:"refreshed,omitzero"`
	// LeaseSeconds is how long the lock protects its holder after
	// Refreshed without another refresh (0: the reader's default).
	LeaseSeconds int `json:"lease_seconds,omitempty"`
	// BootID tells two boots of one host apart (Linux's
	// /proc/sys/kernel/random/boot_id), so that a lock's PID is only ever
	// looked up on the boot that took it; "" where the host has none.
	BootID string `json:"boot_id,omitempty"`
	// PIDNamespace is the holder's PID namespace (Linux's
	// /proc/self/ns/pid, "pid:[inode]"): a PID names the same process only
	// inside it, so another container on the same kernel and host name
	// judges the lock by its lease alone; "" where the system has none.
	PIDNamespace string `json:"pid_namespace,omitempty"`
}

// ErrLockLost is the error of a lock that stopped protecting its holder
// while held (a lease that could not be refreshed in time, or whose object
// another process removed): the holder's work may have run beside a
// conflicting one.
var ErrLockLost = errors.New("lock lost")

// LockLoser is implemented by a LockKeeper whose locks can be lost while
// held (a lease).
type LockLoser interface {
	// Lost returns a channel that is closed when the lock object h, kept by
	// KeepLock and not yet released, has been lost; nil for an unknown h.
	Lost(h Handle) <-chan struct{}
	// LockValid returns an error wrapping ErrLockLost when h no longer
	// protects its holder now, by the wall clock: it does not wait for the
	// next refresh to learn that a suspended host's lease ran out.
	LockValid(h Handle) error
}

func (l LockInfo) String() string {
	kind := "shared"
	if l.Exclusive {
		kind = "exclusive"
	}
	return fmt.Sprintf("%s lock for %s by pid %d of %s@%s since %s", kind, l.Purpose, l.PID,
		l.Username, l.Hostname, l.Time.Format(time.RFC3339))
}

// Lock is a lock this process holds on the repository.
type Lock struct {
	release func() error
	lost    <-chan struct{}
	valid   func() error // nil where the lock cannot be lost
	held    *heldLocks   // the Repository's, which checks it before writes
}

// Unlock releases the lock. Its error wraps ErrLockLost when the lock
// stopped protecting its holder before: also when its lease ran out by
// the wall clock and no step of the holder asked (a read-only command on a
// host that was suspended), before the refresher woke to learn it.
func (l *Lock) Unlock() error {
	l.held.drop(l)
	_ = l.Check() // marks the lock lost; release reports it
	return l.release()
}

// Release unlocks and, when *errp is nil, sets it to Unlock's error, so
// that a lock lost while its holder worked fails the work (defer
// lock.Release(&err)).
func (l *Lock) Release(errp *error) {
	if err := l.Unlock(); err != nil && *errp == nil {
		*errp = err
	}
}

// Check returns an error wrapping ErrLockLost when the lock no longer
// protects its holder; nil while it does, and always for a lock that
// cannot be lost.
func (l *Lock) Check() error {
	if l.valid == nil {
		return nil
	}
	return l.valid()
}

// heldLocks are the locks a Repository took and has not released. Every
// write that a conflicting process could make harmful (removing objects,
// saving a snapshot, marking a forget) checks them first, so that a lock
// lost while its holder works stops the work before its next such step.
type heldLocks struct {
	mu    sync.Mutex
	locks map[*Lock]struct{}
}

func (h *heldLocks) add(l *Lock) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.locks == nil {
		h.locks = map[*Lock]struct{}{}
	}
	h.locks[l] = struct{}{}
}

func (h *heldLocks) drop(l *Lock) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.locks, l)
}

// check returns the error of the first held lock that is lost.
func (h *heldLocks) check() error {
	h.mu.Lock()
	locks := make([]*Lock, 0, len(h.locks))
	for l := range h.locks {
		locks = append(locks, l)
	}
	h.mu.Unlock()
	for _, l := range locks {
		if err := l.Check(); err != nil {
			return err
		}
	}
	return nil
}

// checkLocks returns an error wrapping ErrLockLost when a lock this
// Repository holds was lost: the step about to run could then harm (or
// be harmed by) a process that took a conflicting lock meanwhile.
func (r *Repository) checkLocks() error { return r.held.check() }

// Lost returns a channel that is closed when the lock is lost while held
// (see ErrLockLost), so that its holder can stop its work; it is never
// closed for a protocol whose locks cannot be lost (a local folder's).
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// Lock takes a shared lock (backups, checks, restores) or an exclusive lock
// (destructive maintenance). It never waits: a conflicting lock of a live
// process fails with an error wrapping ErrBusy that names the holder. A lock
// is never broken for being old, only when its owner is provably dead.
func (r *Repository) Lock(ctx context.Context, exclusive bool, purpose string) (*Lock, error) {
	keeper, ok := r.lockKeeper()
	if !ok {
		return nil, r.cannotLock()
	}
	info := LockInfo{Exclusive: exclusive, PID: os.Getpid(), Time: r.now().UTC(), Purpose: purpose}
	info.Hostname, _ = os.Hostname()
	if u, err := user.Current(); err == nil {
		info.Username = u.Username
	}
	name := NewSnapshotID()
	seal := func(info LockInfo) ([]byte, error) {
		plain, err := json.Marshal(info)
		if err != nil {
			return nil, err
		}
		return sealObject(r.seal, "lock", name, plain), nil
	}
	h := Handle{Type: LockFile, Name: name}
	release, err := keeper.KeepLock(ctx, h, info, seal)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, r.cannotLock()
	}
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	conflict, err := r.conflictingLock(ctx, keeper, name, exclusive)
	if err != nil || conflict != nil {
		_ = release()
		if err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		return nil, fmt.Errorf("%w: %s", ErrBusy, conflict)
	}
	l := &Lock{release: release, held: &r.held}
	if loser, ok := keeper.(LockLoser); ok {
		l.lost = loser.Lost(h)
		l.valid = func() error { return loser.LockValid(h) }
	}
	r.held.add(l)
	return l, nil
}

// lockKeeper returns the backend's lock protocol: its own LockKeeper, or
// locks held by this process where it is a ProcessLocker.
func (r *Repository) lockKeeper() (LockKeeper, bool) {
	if k, ok := Capability[LockKeeper](r.be); ok {
		return k, true
	}
	if pl, ok := Capability[ProcessLocker](r.be); ok {
		return processLocks{pl}, true
	}
	return nil, false
}

func (r *Repository) cannotLock() error {
	return fmt.Errorf("storage at %s cannot hold locks", r.be.Location())
}

// processLocks is the lock protocol of storage that ties a lock object to
// the life of the process that holds it (a flock on a local folder): a lock
// is alive exactly while that process holds it, whatever its age.
type processLocks struct{ pl ProcessLocker }

func (p processLocks) KeepLock(ctx context.Context, h Handle, info LockInfo, seal func(LockInfo) ([]byte, error)) (func() error, error) {
	data, err := seal(info)
	if err != nil {
		return nil, err
	}
	return p.pl.SaveHeld(ctx, h, data)
}

func (p processLocks) LockAlive(ctx context.Context, h Handle, _ func() (LockInfo, error)) (bool, error) {
	return p.pl.Held(ctx, h)
}

// conflictingLock looks at every other lock, removes dead ones and returns
// the first live one that conflicts.
func (r *Repository) conflictingLock(ctx context.Context, keeper LockKeeper, own string, exclusive bool) (*LockInfo, error) {
	var names []string
	if err := r.be.List(ctx, LockFile, func(name string, _ int64) error {
		if name != own {
			names = append(names, name)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for _, name := range names {
		h := Handle{Type: LockFile, Name: name}
		load := sync.OnceValues(func() (LockInfo, error) { return r.readLock(ctx, name) })
		alive, err := keeper.LockAlive(ctx, h, load)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !alive {
			// Its holder is provably gone (the kernel dropped its flock).
			if err := r.be.Remove(ctx, h); err != nil && !errors.Is(err, ErrNotFound) {
				return nil, fmt.Errorf("remove lock of dead process: %w", err)
			}
			continue
		}
		info, err := load()
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			// A live lock we cannot read is treated as exclusive.
			return &LockInfo{Exclusive: true, Purpose: "unknown (" + strings.TrimSpace(err.Error()) + ")"}, nil
		}
		if exclusive || info.Exclusive {
			return &info, nil
		}
	}
	return nil, nil
}

func (r *Repository) readLock(ctx context.Context, name string) (LockInfo, error) {
	data, err := r.be.Load(ctx, Handle{Type: LockFile, Name: name}, 0, -1)
	if err != nil {
		return LockInfo{}, err
	}
	plain, err := openObject(r.seal, "lock", name, data)
	if err != nil {
		return LockInfo{}, err
	}
	var info LockInfo
	if err := json.Unmarshal(plain, &info); err != nil {
		return LockInfo{}, fmt.Errorf("lock %s: %v: %w", name, err, ErrIntegrity)
	}
	return info, nil
}
