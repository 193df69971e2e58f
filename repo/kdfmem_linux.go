package repo

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// prepareKDFMemory makes the Argon2id work area that is about to be
// allocated come from transparent huge pages.
//
// Argon2id touches all of its memory (48 MiB by default) once, and
// golang.org/x/crypto/argon2 allocates that memory itself. Under the
// kernel's usual THP setting "madvise", each 4 KiB page of it costs a page
// fault: on the 2-core benchmark VM, 0.20 to 0.25 s of system time for a
// key derivation that computes for 0.1 s, and half of an unchanged
// re-backup (docs/PERFORMANCE.md). So twice that amount is allocated here,
// never touched, and marked MADV_HUGEPAGE; the collection that follows
// frees it, and the Go heap, which hands out the lowest free range that
// fits, gives argon2's allocation a range inside it even when a few small
// allocations come first. The kernel then faults the area in 2 MiB at a
// time: the derivation takes 0.07 s instead of 0.17 s.
//
// If the range is not reused, or THP is "never", nothing is lost but a
// collection; the rest of the marked range serves later allocations.
func prepareKDFMemory(bytes uint64) {
	area := make([]byte, 2*bytes)
	// A failing madvise (an old kernel, a seccomp filter) only leaves the
	// usual small pages.
	_ = unix.Madvise(area, unix.MADV_HUGEPAGE)
	runtime.KeepAlive(area)
	runtime.GC()
}
