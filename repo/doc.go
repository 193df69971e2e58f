// Package repo is nightjar's repository: the on-disk format (docs/FORMAT.md),
// keys and encryption, packs, the index, trees, snapshots, locks and check.
//
// All I/O goes through the small Backend interface, so the same code works on
// a local directory (package repo/backend/local) and, later, on object stores. The
// format therefore never appends to, renames or partially overwrites an
// object that readers can see: every object is written whole, under its final
// name, and is never changed afterwards, but for the few that are replaced
// whole (docs/FORMAT.md, Layout: config, pins, a snapshot whose tags change).
//
// The repository alone is enough to list and restore every snapshot. Package
// repo knows nothing of jobs, runs, schedules or SQL, and it must never write
// an object that refers to another object before that other object is stored.
package repo
