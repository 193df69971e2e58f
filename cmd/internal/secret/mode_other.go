//go:build !unix

package secret

// modeBitsMeanAccess: on Windows (and Plan 9) Go's permission bits do not
// say who may write a file (ACLs do), so they are not judged.
const modeBitsMeanAccess = false
