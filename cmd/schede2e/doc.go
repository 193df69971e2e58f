// Package schede2e holds end-to-end tests of the scheduler (its test files
// only). They drive the Linux binary with FIFOs, pidfds and signals, so they
// build on Linux only; on other platforms the package is empty.
package schede2e
