// Package e2e holds end-to-end tests of the nightjar binary (its test files
// only). They drive the Linux binary with FIFOs, pidfds and credentials, so
// they build on Linux only; on other platforms the package is empty.
package e2e
