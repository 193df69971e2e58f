package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nightjar-backup/nightjar/hostid"
	"github.com/nightjar-backup/nightjar/repo"
)

// DefaultLease is how long a lock protects its holder after its last
// refresh; the holder refreshes it every DefaultLease/5.
const DefaultLease = 5 * time.Minute

// DefaultSkew is the margin added to a lease before another process judges
// a lock dead, for the difference between its clock and the holder's.
const DefaultSkew = time.Minute

// Clock is the time a Backend reads and waits on: the real one, or a
// test's.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

// Now is the wall clock without its monotonic reading: a lease is judged
// by other hosts on wall time, which (unlike Go's monotonic clock) goes on
// while this host is suspended.
func (realClock) Now() time.Time                         { return time.Now().Round(0) }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Option changes a setting of Wrap.
type Option func(*Backend)

// WithLease sets the lease (DefaultLease otherwise); values below a second
// are taken as a second.
func WithLease(d time.Duration) Option {
	return func(b *Backend) { b.lease = max(d, time.Second) }
}

// WithSkew sets the margin for clock skew (DefaultSkew otherwise).
func WithSkew(d time.Duration) Option {
	return func(b *Backend) { b.skew = max(d, 0) }
}

// WithClock makes the Backend read and wait on c instead of the real clock.
func WithClock(c Clock) Option {
	return func(b *Backend) { b.clock = c }
}

// Backend wraps a backend and keeps its locks as leases (repo.LockKeeper).
// Every other capability of the wrapped backend stays reachable through
// Unwrap.
type Backend struct {
	repo.Backend
	lease, skew time.Duration
	clock       Clock
	host, boot  string
	pidns       string

	mu   sync.Mutex
	kept map[repo.Handle]*kept
}

var (
	_ repo.LockKeeper = (*Backend)(nil)
	_ repo.LockLoser  = (*Backend)(nil)
)

// Wrap returns be with leases for locks.
func Wrap(be repo.Backend, opts ...Option) *Backend {
	b := &Backend{Backend: be, lease: DefaultLease, skew: DefaultSkew, clock: realClock{}, boot: hostid.BootID(), pidns: hostid.PIDNamespace(), kept: map[repo.Handle]*kept{}}
	b.host, _ = os.Hostname()
	for _, o := range opts {
		o(b)
	}
	return b
}

// Unwrap returns the wrapped backend.
func (b *Backend) Unwrap() repo.Backend { return b.Backend }

// Lease returns the lease of the locks this Backend takes.
func (b *Backend) Lease() time.Duration { return b.lease }

// kept is one lock this process keeps alive.
type kept struct {
	stop, done, lost chan struct{}
	lostErr          error // set before lost is closed
	loseOnce         sync.Once

	mu   sync.Mutex
	last time.Time // the last successful save, by the wall clock
}

// KeepLock saves the lock object h and refreshes it every lease/5 until
// release. release stops the refreshing, waits for it to end and removes
// the object; its error wraps repo.ErrLockLost when the lease was lost.
func (b *Backend) KeepLock(ctx context.Context, h repo.Handle, info repo.LockInfo, seal func(repo.LockInfo) ([]byte, error)) (func() error, error) {
	now := b.clock.Now()
	info.Refreshed = now.UTC()
	info.LeaseSeconds = int(b.lease / time.Second)
	info.BootID = b.boot
	info.PIDNamespace = b.pidns
	data, err := seal(info)
	if err != nil {
		return nil, err
	}
	if err := b.Backend.Save(ctx, h, data); err != nil {
		return nil, err
	}
	k := &kept{stop: make(chan struct{}), done: make(chan struct{}), lost: make(chan struct{}), last: now.Round(0)}
	b.mu.Lock()
	b.kept[h] = k
	b.mu.Unlock()
	// The refresher outlives a cancelled ctx: the holder is still working
	// until it calls release, and its lock must protect it until then.
	bg := context.WithoutCancel(ctx)
	go b.refresh(bg, h, info, seal, k)
	var once sync.Once
	var releaseErr error
	release := func() error {
		once.Do(func() {
			close(k.stop)
			<-k.done
			b.mu.Lock()
			delete(b.kept, h)
			b.mu.Unlock()
			rctx, cancel := context.WithTimeout(bg, b.lease)
			defer cancel()
			err := b.removeLock(rctx, h)
			if errors.Is(err, repo.ErrNotFound) {
				err = nil
			}
			select {
			case <-k.lost:
				releaseErr = k.lostErr
			default:
				if err != nil {
					releaseErr = fmt.Errorf("remove lock %s: %w", h.Name, err)
				}
			}
		})
		return releaseErr
	}
	return release, nil
}

// Deleter is implemented by storage that can remove an object without
// first asking whether it is there (the s3 backend's Delete: S3's DELETE
// succeeds on a missing key). Releasing a lock does not mind a lock that
// is gone already, so the question would be a request for nothing.
type Deleter interface {
	Delete(ctx context.Context, h repo.Handle) error
}

// removeLock removes a released lock object, with Delete where the storage
// has it.
func (b *Backend) removeLock(ctx context.Context, h repo.Handle) error {
	if d, ok := repo.Capability[Deleter](b.Backend); ok {
		return d.Delete(ctx, h)
	}
	return b.Backend.Remove(ctx, h)
}

// refresh saves the lock again every lease/5 until stop is closed. It gives
// up, and marks the lock lost, when the lock object is gone or when its
// last successful refresh is a whole lease old: from then on another
// process may judge the lock dead, and a refresh must not bring it back.
func (b *Backend) refresh(ctx context.Context, h repo.Handle, info repo.LockInfo, seal func(repo.LockInfo) ([]byte, error), k *kept) {
	defer close(k.done)
	interval := b.lease / 5
	var lastErr error
	for {
		// Wake at the next refresh, or when the lease runs out if that
		// is sooner (after failed refreshes), to give up in time.
		wait := min(interval, k.left(b.lease, b.clock.Now()))
		select {
		case <-k.stop:
			return
		case <-k.lost: // LockValid found the lease run out
			return
		case <-b.clock.After(max(wait, 0)):
		}
		now := b.clock.Now().Round(0)
		left := k.left(b.lease, now)
		if left <= 0 {
			b.lose(k, fmt.Errorf("%w: lock %s not refreshed for %s, its lease (last error: %v)", repo.ErrLockLost, h.Name, b.lease, lastErr))
			return
		}
		sctx, cancel := context.WithTimeout(ctx, left)
		err := b.refreshOnce(sctx, h, info, seal, now)
		cancel()
		if errors.Is(err, repo.ErrNotFound) {
			b.lose(k, fmt.Errorf("%w: lock %s was removed by another process", repo.ErrLockLost, h.Name))
			return
		}
		if err != nil {
			lastErr = err
			continue
		}
		k.mu.Lock()
		k.last = now
		k.mu.Unlock()
		lastErr = nil
	}
}

// left returns how long the lease protects its holder after now, by the
// wall clock (negative once it ran out).
func (k *kept) left(lease time.Duration, now time.Time) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last.Add(lease).Sub(now.Round(0))
}

// refreshOnce saves the lock with the refresh time now, if its object is
// still there.
func (b *Backend) refreshOnce(ctx context.Context, h repo.Handle, info repo.LockInfo, seal func(repo.LockInfo) ([]byte, error), now time.Time) error {
	if _, err := b.Backend.Stat(ctx, h); err != nil {
		return err
	}
	info.Refreshed = now.UTC()
	data, err := seal(info)
	if err != nil {
		return err
	}
	return b.Backend.Save(ctx, h, data)
}

func (b *Backend) lose(k *kept, err error) {
	k.loseOnce.Do(func() {
		k.lostErr = err
		close(k.lost)
	})
}

// LockValid returns an error wrapping repo.ErrLockLost when the lock h is
// lost or its lease has run out by the wall clock now (a host that was
// suspended learns it here, before its refresher wakes); the lock is then
// lost for good. A lock this Backend does not keep is not its to judge:
// nil.
func (b *Backend) LockValid(h repo.Handle) error {
	b.mu.Lock()
	k, ok := b.kept[h]
	b.mu.Unlock()
	if !ok {
		return nil
	}
	if k.left(b.lease, b.clock.Now()) <= 0 {
		b.lose(k, fmt.Errorf("%w: lock %s not refreshed for %s, its lease, by the wall clock", repo.ErrLockLost, h.Name, b.lease))
	}
	select {
	case <-k.lost:
		return k.lostErr
	default:
		return nil
	}
}

// Lost returns a channel that is closed when the lock h, kept and not yet
// released, is lost (repo.LockLoser); nil for a lock this Backend does not
// keep.
func (b *Backend) Lost(h repo.Handle) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k, ok := b.kept[h]; ok {
		return k.lost
	}
	return nil
}

// LockAlive reports whether the lock h still protects its holder: it is
// dead when its holder's process is provably gone (taken on this host and
// boot), or when its last refresh is older than its lease plus the skew
// margin. A lock whose content cannot be read is alive: nothing tells when
// it was refreshed.
func (b *Backend) LockAlive(ctx context.Context, h repo.Handle, load func() (repo.LockInfo, error)) (bool, error) {
	info, err := load()
	if errors.Is(err, repo.ErrNotFound) {
		return false, err
	}
	if err != nil {
		return true, nil
	}
	if b.sameHost(info) && info.PID != os.Getpid() && ProcessGone(info.PID) {
		return false, nil
	}
	last := info.Refreshed
	if last.IsZero() {
		last = info.Time
	}
	if timer, ok := repo.Capability[repo.ObjectTimer](b.Backend); ok {
		saved, err := timer.ModTime(ctx, h)
		if err != nil {
			return false, err
		}
		if saved.After(last) {
			last = saved
		}
	}
	lease := b.lease
	if info.LeaseSeconds > 0 {
		lease = time.Duration(info.LeaseSeconds) * time.Second
	}
	return b.clock.Now().Sub(last) <= lease+b.skew, nil
}

// sameHost reports whether the lock's PID names a process this one can
// look up: taken on this host, in this boot where the host tells its boots
// apart, and in this PID namespace where the system has them (a lock of
// another container on this kernel, or of a nightjar that wrote no
// namespace, is judged by its lease alone).
func (b *Backend) sameHost(info repo.LockInfo) bool {
	if hostid.NamespacesKnown && b.pidns == "" {
		return false
	}
	return b.host != "" && info.Hostname == b.host && info.BootID == b.boot && info.PIDNamespace == b.pidns
}
