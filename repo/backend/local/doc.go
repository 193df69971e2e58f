// Package local stores a repository in a directory of the local file
// system. Every object is written to a temporary file in the repository's
// tmp folder, synced, renamed into place and its folder synced, so that a
// crash leaves either the whole object or none (and, at worst, a temporary
// file for prune to remove). Files are created 0600 and folders 0700.
//
// It holds locks with flock(2), which the kernel drops when the process
// dies, so a dead process's lock is recognised at once. It must never follow
// a symlink out of the repository's folder nor write outside it.
package local
