// Package lease is the lock protocol of storage that cannot tie a lock to a
// process (object stores): Wrap gives a backend a repo.LockKeeper whose
// locks are leases. The holder saves its lock object again with a fresh
// refresh time every lease/5 while it works; another process finds a lock
// dead only when its last refresh is older than the lease plus a margin for
// clock skew, or, on the holder's own host and boot, when the holder's
// process is provably gone. A lock is never dead for being old while it is
// refreshed.
//
// A holder whose refreshes keep failing until its lease would run out, or
// whose lock object another process removed, has lost its lock: it stops
// refreshing (so that it never brings back a lock another process has
// judged dead), the channel of repo.LockLoser.Lost is closed, and release
// returns an error wrapping repo.ErrLockLost.
//
// The times compared are the refresh time in the lock's content (the
// holder's clock) and, where the backend is a repo.ObjectTimer, the object's
// modification time (the storage's clock), whichever is later, against this
// host's clock: a lock is judged dead only when both are old, so one wrong
// clock can make a lock live longer but not die sooner, as long as the
// clocks of the holder and of the judge differ by less than the margin.
package lease
