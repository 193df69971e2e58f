//go:build !linux && !darwin

package hostid

// BootID returns "": this system offers no boot ID that nightjar reads, and
// a host is then known by its name alone.
func BootID() string { return "" }

// PIDNamespace returns "": this system has no PID namespaces.
func PIDNamespace() string { return "" }

// NamespacesKnown is false: a host's PIDs are one set.
const NamespacesKnown = false
