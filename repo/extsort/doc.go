// Package extsort sorts a stream of fixed-size records (32-byte blob IDs
// by default) that may not fit in memory, and hands them back in order,
// as byte strings, without duplicates: records are buffered up to a
// memory budget, each full buffer is sorted and spilled as a run to a
// temporary file, and the runs are merged k-way, at most MaxOpen files
// open at once (more runs are first merged into intermediate files).
// Prune uses it for the set of blobs the snapshots use and for the index
// entries (a blob ID, then its pack and place), so that its memory does
// not grow with the number of blobs.
//
// A process killed while it sorts cannot remove its run files. Every
// Sorter that spills therefore holds an advisory lock on a lock file of
// its own while its runs exist, and Sweep removes the runs (and lock
// files) of sorters whose lock nobody holds: their process has ended
// (see sweep.go).
//
// It must never hold more than its budget of records in memory, never
// keep more than MaxOpen run files open (and its lock file), never leave
// a file behind after Close, whatever failed, and never sweep a file of a
// sorter that still runs. It knows nothing of repositories: a record is
// bytes, ordered from its first byte.
package extsort
