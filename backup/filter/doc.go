// Package filter matches paths against include and exclude patterns: the
// patterns of backup --exclude and --exclude-file and of restore --include and
// --exclude. Its syntax and meaning follow restic's: patterns anchored with a
// leading "/" or matching at any depth, "*", "?" and "[...]" within one path
// component, "**" for any number of components, a match on a directory
// covering everything below it, and "!" re-including what an earlier pattern
// matched.
//
// It only answers questions about path strings: it must never touch the file
// system (apart from reading a pattern file), expand "~" or environment
// variables, or decide whether a match means include or exclude; that is the
// caller's.
package filter
