//go:build !linux

package lease

// bootID returns "": this system offers no ID of the boot that this package
// reads, and a lock's host is then known by its name only.
func bootID() string { return "" }
