// Package backup is nightjar's engine: it walks sources, chunks, hashes and
// stores files through repo (Backup), or one stream as one file (Stream:
// standard input, a command's output). Restoring is package restore's.
//
// A backup overlaps its stages: one walker lists directories in order and
// builds trees, a pool of file workers reads and chunks files, and a pool of
// savers compresses, seals and packs new chunks; the queues between them
// are bounded, so memory does not grow with the size of the files.
//
// The archiver reads sources only through FS (OSFS unless told otherwise),
// sees the repository only through the Repository interface, and writes
// only inside one write session, so that no pack write outlives a backup.
//
// It must never skip anything silently: every entry it cannot save is
// counted and listed with its reason, and such a snapshot is marked partial.
package backup
