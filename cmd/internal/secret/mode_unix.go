//go:build unix

package secret

// modeBitsMeanAccess: on Unix a file's permission bits say who may read
// and write it.
const modeBitsMeanAccess = true
