package extsort

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Why a lock file per Sorter, and not a process ID in the names of the
// runs: a process ID is reused, and means nothing across PID namespaces
// (containers that share a temporary folder), while an advisory lock is
// released by the kernel the moment its process ends, however it ends
// (SIGKILL, a crash), and is seen by every process that opens the file.
// Why one lock file and not a lock on each run: a run is closed between
// the time it is written and the merge that reads it, and holding every
// run open for its lock would break MaxOpen.
//
// The files of one Sorter share a token: its lock file is
// nightjar-sort-TOKEN.lock, its runs nightjar-sort-TOKEN-*.run. The lock
// file exists, locked, from before the first run is created until after
// the last is removed. So a run whose lock file can be locked, or is
// gone, belongs to a Sorter that no longer runs.

// The parts of the names of a Sorter's files.
const (
	namePrefix = "nightjar-sort-"
	runSuffix  = ".run"
	lockSuffix = ".lock"
)

// lockToken is the token of the Sorter that holds lock.
func lockToken(lock *os.File) string {
	return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(lock.Name()), namePrefix), lockSuffix)
}

// runPattern is the os.CreateTemp pattern of the runs of the Sorter that
// holds lock.
func runPattern(lock *os.File) string {
	return namePrefix + lockToken(lock) + "-*" + runSuffix
}

// liveTokens holds the tokens of this process's Sorters whose files
// exist. Why, beside the locks: where flock is emulated with POSIX locks
// (NFS, CIFS), a lock never conflicts with another of the same process,
// so a Sweep would claim the lock of a Sorter of its own process.
var liveTokens = struct {
	sync.Mutex
	set map[string]bool
}{set: map[string]bool{}}

// setLive records whether this process's Sorter of token has files.
func setLive(token string, live bool) {
	liveTokens.Lock()
	defer liveTokens.Unlock()
	if live {
		liveTokens.set[token] = true
	} else {
		delete(liveTokens.set, token)
	}
}

// isLive reports whether a Sorter of this process has the files of token.
func isLive(token string) bool {
	liveTokens.Lock()
	defer liveTokens.Unlock()
	return liveTokens.set[token]
}

// claim is claimLock; tests replace it to act out a file system whose
// locks do not conflict within a process.
var claim = claimLock

// Swept says what Sweep did in a folder.
type Swept struct {
	// Sorts is the number of sorters whose process ended that left
	// files, now removed.
	Sorts int
	// Runs and Bytes are the run files removed and their size.
	Runs  int
	Bytes int64
	// Live is the number of run files of sorters that still run, left.
	Live int
	// Others is the number of another user's files (runs and lock
	// files), left to that user: not a failure.
	Others int
	// Older is the number of run files named as nightjar did before its
	// sorters took locks: whether their process still runs is unknown,
	// so they are left (they may be deleted once no nightjar runs).
	Older int
	// Failed is the number of files that could not be judged or removed
	// (Sweep's error says why); they are left.
	Failed int
}

// lockState is what claimLock found.
type lockState int

const (
	lockLive    lockState = iota // held: its Sorter runs
	lockClaimed                  // ours now: its Sorter's process ended
	lockGone                     // no lock file: its Sorter ended
)

// Sweep removes from dir ("" is os.TempDir()) the run files, and lock
// files, of sorters whose process has ended: a check or prune that was
// killed. Files of sorters that still run, in any process (this one too),
// are left, and so are another user's files. It goes on after a
// failure; the error, of one line, names the first and how many more.
func Sweep(dir string) (Swept, error) {
	var sw Swept
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return sw, fmt.Errorf("sweep sort runs: %w", err)
	}
	runs := map[string][]string{} // by token
	locks := map[string]bool{}    // tokens whose lock file is listed
	var errs []error
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), namePrefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		// Another user's files are theirs to sweep (as root too, which
		// could open their locks): only the owner knows they ended.
		if fi, err := os.Lstat(filepath.Join(dir, e.Name())); errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		} else if err != nil {
			sw.Failed++
			errs = append(errs, fmt.Errorf("judge a sort file: %w", err))
			continue
		} else if !ownedByUs(fi) {
			sw.Others++
			continue
		}
		if token, ok := strings.CutSuffix(rest, lockSuffix); ok && token != "" && !strings.Contains(token, "-") {
			locks[token] = true
			if _, seen := runs[token]; !seen {
				runs[token] = nil
			}
			continue
		}
		rest, ok = strings.CutSuffix(rest, runSuffix)
		if !ok {
			continue
		}
		if token, _, ok := strings.Cut(rest, "-"); ok && token != "" {
			runs[token] = append(runs[token], e.Name())
		} else {
			sw.Older++
		}
	}
	for _, token := range slices.Sorted(maps.Keys(runs)) {
		names := runs[token]
		if isLive(token) {
			sw.Live += len(names)
			continue
		}
		state, release, err := claim(filepath.Join(dir, namePrefix+token+lockSuffix))
		if err != nil {
			sw.Failed += len(names)
			if locks[token] {
				sw.Failed++
			}
			errs = append(errs, err)
			continue
		}
		if state == lockLive {
			sw.Live += len(names)
			continue
		}
		for _, name := range names {
			path := filepath.Join(dir, name)
			fi, err := os.Lstat(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue // its Sorter removed it as it ended
			}
			if err == nil {
				err = os.Remove(path)
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				sw.Failed++
				errs = append(errs, fmt.Errorf("remove run of an ended sort: %w", err))
				continue
			}
			sw.Runs++
			sw.Bytes += fi.Size()
		}
		if state == lockClaimed {
			sw.Sorts++
			if err := release(); err != nil {
				sw.Failed++
				errs = append(errs, err)
			}
		}
	}
	switch len(errs) {
	case 0:
		return sw, nil
	case 1:
		return sw, fmt.Errorf("sweep sort runs: %w", errs[0])
	default:
		return sw, fmt.Errorf("sweep sort runs: %w (and %d more failures)", errs[0], len(errs)-1)
	}
}
