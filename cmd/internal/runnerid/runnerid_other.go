//go:build !linux && !darwin

package runnerid

// Without a portable way to ask here, the boot ID, the PID namespace and
// start times are unknown: a runner of this host is judged by its PID
// alone, as before, and a reused PID is taken for the runner (which then
// is left to its lease).
func bootID() string       { return "" }
func pidNamespace() string { return "" }
func startTime(int) uint64 { return 0 }
