package cmd

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"time"
)

// startProfiles writes a CPU profile to $NIGHTJAR_CPU_PROFILE, a heap
// profile to $NIGHTJAR_MEM_PROFILE and a runtime trace (which goroutine
// ran or waited when: bench/firstbackup/idle.py) to $NIGHTJAR_TRACE when
// they are set, and heap profiles at the heap's peaks to
// $NIGHTJAR_PEAK_PROFILE.NN (peakProfiles), for measuring
// (docs/PERFORMANCE.md). The returned function finishes them.
func startProfiles(stderr io.Writer) func() {
	var stops []func()
	// recording starts a recording into the file named by the variable
	// env, when it is set.
	recording := func(env, what string, start func(io.Writer) error, stop func()) {
		path := os.Getenv(env)
		if path == "" {
			return
		}
		f, err := os.Create(path)
		if err == nil {
			err = start(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "warning: %s: %v\n", what, err)
			return
		}
		stops = append(stops, func() { stop(); f.Close() })
	}
	recording("NIGHTJAR_CPU_PROFILE", "cpu profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
	recording("NIGHTJAR_TRACE", "runtime trace", trace.Start, trace.Stop)
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
	if path := os.Getenv("NIGHTJAR_PEAK_PROFILE"); path != "" {
		stop := make(chan struct{})
		go peakProfiles(path, stop, stderr)
		stops = append(stops, func() { close(stop) })
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// peakProfiles writes a heap profile to path.NN each time the live heap
// has grown or shrunk by 4 MiB since the last one, and a line with the
// live heap to stderr, until stop is closed: what the heap holds at its
// peaks, which the profile at exit does not show (docs/PERFORMANCE.md,
// "Memory at every step"). It collects twice before each profile, so
// that the profile is of that moment; that slows the command, and is for
// measuring only.
func peakProfiles(path string, stop <-chan struct{}, stderr io.Writer) {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var last uint64
	for n := 1; ; {
		select {
		case <-stop:
			return
		case <-time.After(2 * time.Millisecond):
		}
		metrics.Read(live)
		v := live[0].Value.Uint64()
		if v < last+4<<20 && v+4<<20 > last {
			continue
		}
		last = v
		runtime.GC()
		runtime.GC()
		f, err := os.Create(fmt.Sprintf("%s.%02d", path, n))
		if err == nil {
			err = pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
		if err != nil {
			fmt.Fprintf(stderr, "warning: peak heap profile: %v\n", err)
			return
		}
		metrics.Read(live)
		fmt.Fprintf(stderr, "peak heap profile %s.%02d: live heap %d MiB, %d MiB after collecting\n", path, n, v>>20, live[0].Value.Uint64()>>20)
		n++
	}
}
