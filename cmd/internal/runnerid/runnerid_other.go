//go:build !linux && !darwin

package runnerid

// startTime returns 0: without a portable way to ask here, start times are
// unknown, so a reused PID is taken for the runner (which then is left to
// its lease).
func startTime(int) uint64 { return 0 }
