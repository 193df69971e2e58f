package cpuprofile

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// Start writes a CPU profile to path until the returned stop is called;
// with an empty path it does nothing. Stop may be called more than once.
func Start(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
