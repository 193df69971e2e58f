// Package db is nightjar's state database: SQLite through modernc.org/sqlite
// (pure Go, no cgo), with its schema migrated by goose from the SQL files in
// migrations/, which are embedded in the binary and applied by Open.
//
// It records what happened and why: the jobs synchronised from the
// configuration, every run with its trigger, times, status, error class,
// figures and held reason, the snapshots a run made (by reference only:
// repository ID and snapshot ID), an audit trail of who paused, resumed,
// triggered, cancelled or deleted what (each row with the job it is about,
// so that it is found by job after its run was purged). *DB
// implements pass.Store, so the scheduler pass can use it without knowing
// SQL. The catalog (catalog.go) is a cache of the snapshots each configured
// repository holds, for fast listings: the repository is the truth, and a
// sync rebuilds the catalog from what the caller read of it.
//
// # Rules
//
// It is the only package that writes SQL, and every method is one
// transaction. Writing transactions begin with BEGIN IMMEDIATE (the
// _txlock=immediate connection parameter), so two passes in two processes
// queue for the write lock instead of both reading and then both claiming:
// the same job or run is never handed to two of them. Reads that need a
// consistent view use a read-only (deferred) transaction. Open serialises
// migrations between processes with flock(2) on a file beside the
// database (its path plus ".lock"), which it leaves in place.
//
// The invariants live in the schema, not only in this code: one active
// (queued or running) run per job (a partial unique index), no succeeded run
// with skipped files, no failed run without an error class, no held reason
// outside a queued run and no empty one, no self-dependency, no zero
// bandwidth, and only known statuses, triggers, classes and priorities
// (schedule.PriorityLevels, which a schema test ties to the CHECKs). A run's
// kind is any non-empty name and its counters a JSON object, so that a new
// kind needs no migration.
//
// Times are stored as INTEGER nanoseconds since the Unix epoch, UTC; NULL
// means not set (the zero time.Time). They are read back in UTC. Times
// outside the years 1678 to 2262 cannot be stored.
//
// # What it must never do
//
// It knows nothing of repositories' insides: it never opens one, never
// copies a manifest (the catalog keeps the few fields of a snapshot record
// a listing shows, as plain values the caller hands it), and records a
// backup only by reference. It makes no
// scheduling decision (the pass's callbacks do, inside the transaction), and
// it never reads the real clock: Open is handed one. It deletes a run only
// when PurgeRuns finds it older than the history kept (scheduler.keep_runs)
// and never a queued or running run, nor the newest run of a job, kind and
// status (what dependencies, job list and status read); an aborted run is
// an event, and a job removed from the configuration is soft-deleted with
// its history kept.
package db
