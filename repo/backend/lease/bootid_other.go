//go:build !linux

package lease

// bootID returns "": this system offers no ID of the boot that this package
// reads, and a lock's host is then known by its name only.
func bootID() string { return "" }

// pidNamespace returns "": this system has no PID namespaces.
func pidNamespace() string { return "" }

// namespacesKnown is false: with no PID namespaces, a host's PIDs are one
// set.
const namespacesKnown = false
