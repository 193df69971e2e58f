package cmd

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles writes a CPU profile to $NIGHTJAR_CPU_PROFILE and a heap
// profile to $NIGHTJAR_MEM_PROFILE when they are set, for measuring
// (docs/PERFORMANCE.md). The returned function finishes them.
func startProfiles(stderr io.Writer) func() {
	var stops []func()
	if path := os.Getenv("NIGHTJAR_CPU_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "warning: cpu profile: %v\n", err)
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if path := os.Getenv("NIGHTJAR_MEM_PROFILE"); path != "" {
		stops = append(stops, func() {
			f, err := os.Create(path)
			if err != nil {
				fmt.Fprintf(stderr, "warning: heap profile: %v\n", err)
				return
			}
			defer f.Close()
			runtime.GC()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				fmt.Fprintf(stderr, "warning: heap profile: %v\n", err)
			}
		})
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}
