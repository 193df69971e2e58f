package extsort

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// randomIDs returns n IDs drawn from distinct values (distinct 0: all
// random), so that a small distinct count repeats IDs across runs.
func randomIDs(seed uint64, n, distinct int) []ID {
	rng := rand.New(rand.NewPCG(seed, 1))
	pool := make([]ID, distinct)
	for i := range pool {
		fill(rng, &pool[i])
	}
	ids := make([]ID, n)
	for i := range ids {
		if distinct > 0 {
			ids[i] = pool[rng.IntN(distinct)]
		} else {
			fill(rng, &ids[i])
		}
	}
	return ids
}

func fill(rng *rand.Rand, id *ID) {
	for i := range id {
		id[i] = byte(rng.Uint32())
	}
}

// inMemory is the oracle: ids sorted, without duplicates.
func inMemory(ids []ID) []ID {
	want := slices.Clone(ids)
	slices.SortFunc(want, func(a, b ID) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(want)
}

func collect(t *testing.T, s *Sorter) []ID {
	t.Helper()
	it, err := s.Sorted()
	if err != nil {
		t.Fatalf("Sorted: %v", err)
	}
	var got []ID
	for it.Next() {
		got = append(got, it.ID())
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	return got
}

// filesIn lists the files in dir.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// The IDs come back sorted and distinct, the same as an in-memory sort, on
// both sides of every boundary: nothing spilled, one run, exactly MaxOpen
// runs (one final merge), one more (an intermediate merge first), and
// MaxOpen*MaxOpen+1 runs of one ID each (merges of merges). Never more
// than MaxOpen files are open, and Close leaves nothing behind.
func TestSortedMatchesInMemorySort(t *testing.T) {
	tests := []struct {
		name       string
		n          int
		distinct   int // 0: random IDs
		perRun     int // IDs per run (the budget)
		wantRuns   int
		wantMerges int
	}{
		{name: "empty", n: 0, perRun: 10},
		{name: "one ID", n: 1, perRun: 10},
		{name: "just below one run, all in memory", n: 9, perRun: 10},
		{name: "exactly one run", n: 10, perRun: 10, wantRuns: 1},
		{name: "one run and one ID", n: 11, perRun: 10, wantRuns: 2},
		{name: "exactly 64 runs", n: 640, perRun: 10, wantRuns: 64},
		{name: "65 runs", n: 641, perRun: 10, wantRuns: 65, wantMerges: 1},
		// Each intermediate merge turns 63 runs into one: 4097 runs
		// need ceil((4097-64)/62) = 66 of them.
		{name: "64*64+1 runs of one ID", n: 64*64 + 1, perRun: 1, wantRuns: 64*64 + 1, wantMerges: 66},
		{name: "duplicates across runs", n: 5000, distinct: 300, perRun: 50, wantRuns: 100, wantMerges: 1},
		{name: "duplicates in memory", n: 500, distinct: 7, perRun: 1000},
		{name: "one ID many times, many runs", n: 700, distinct: 1, perRun: 10, wantRuns: 70, wantMerges: 1},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ids := randomIDs(uint64(i), tc.n, tc.distinct)
			s := New(Options{Dir: dir, MemoryBudget: tc.perRun * len(ID{})})
			for _, id := range ids {
				if err := s.Add(id); err != nil {
					t.Fatalf("Add: %v", err)
				}
			}
			got := collect(t, s)
			if want := inMemory(ids); !slices.Equal(got, want) {
				t.Errorf("got %d IDs, want the %d of an in-memory sort", len(got), len(want))
			}
			if s.stats.runs != tc.wantRuns || s.stats.merges != tc.wantMerges {
				t.Errorf("%d runs and %d intermediate merges, want %d and %d", s.stats.runs, s.stats.merges, tc.wantRuns, tc.wantMerges)
			}
			if s.stats.openPeak > MaxOpen {
				t.Errorf("%d files were open at once, more than %d", s.stats.openPeak, MaxOpen)
			}
			if tc.wantRuns > 0 && len(filesIn(t, dir)) == 0 {
				t.Errorf("no run file while iterating: were the runs spilled?")
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if left := filesIn(t, dir); len(left) > 0 {
				t.Errorf("Close left files behind: %v", left)
			}
		})
	}
}

// runsIn lists the run files in dir.
func runsIn(t *testing.T, dir string) []string {
	t.Helper()
	var runs []string
	for _, name := range filesIn(t, dir) {
		if strings.HasSuffix(name, runSuffix) {
			runs = append(runs, name)
		}
	}
	return runs
}

// Run files, and the lock file beside them, can be read by their owner
// only.
func TestRunFilesArePrivate(t *testing.T) {
	dir := t.TempDir()
	s := New(Options{Dir: dir, MemoryBudget: 32})
	defer s.Close()
	for _, id := range randomIDs(1, 3, 0) {
		if err := s.Add(id); err != nil {
			t.Fatal(err)
		}
	}
	names := filesIn(t, dir)
	if len(names) != 4 || len(runsIn(t, dir)) != 3 {
		t.Fatalf("files %v, want 3 runs and their lock", names)
	}
	for _, name := range names {
		fi, err := os.Stat(dir + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("run file %s has mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
}

var errDiskFull = errors.New("no space left on device (simulated)")

// failingWriter fails every write after limit bytes, as a full disk does.
type failingWriter struct {
	w     io.Writer
	limit int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.limit {
		n, _ := f.w.Write(p[:f.limit])
		f.limit = 0
		return n, errDiskFull
	}
	f.limit -= len(p)
	return f.w.Write(p)
}

// A disk that fills up while a run is spilled (from Add or from Sorted) or
// while runs are merged (in Sorted) fails with the disk's error and the
// step that met it, and the files made so far are gone after Close.
func TestFullDisk(t *testing.T) {
	tests := []struct {
		name     string
		failFile int // the run file (counted from 1) whose writes fail
		limit    int // bytes written to it before the disk is full
		n        int
		wantIn   string // the step named in the error
	}{
		{name: "first run, nothing written", failFile: 1, limit: 0, n: 100, wantIn: "spill sorted run"},
		{name: "third run, half written", failFile: 3, limit: 5 * 32, n: 100, wantIn: "spill sorted run"},
		{name: "last run, spilled by Sorted", failFile: 11, limit: 0, n: 105, wantIn: "spill sorted run"},
		{name: "intermediate merge", failFile: 66, limit: 100 * 32, n: 650, wantIn: "merge sorted runs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := New(Options{Dir: dir, MemoryBudget: 10 * 32})
			files := 0
			s.wrap = func(w io.Writer) io.Writer {
				files++
				if files == tc.failFile {
					return &failingWriter{w: w, limit: tc.limit}
				}
				return w
			}
			var err error
			for _, id := range randomIDs(2, tc.n, 0) {
				if err = s.Add(id); err != nil {
					break
				}
			}
			if err == nil {
				_, err = s.Sorted()
			}
			if !errors.Is(err, errDiskFull) || !strings.Contains(err.Error(), tc.wantIn) {
				t.Errorf("error %v, want the disk's error in %q", err, tc.wantIn)
			}
			if files != tc.failFile {
				t.Errorf("the sorter went on after the failure: %d run files, the %dth failed", files, tc.failFile)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if left := filesIn(t, dir); len(left) > 0 {
				t.Errorf("files left after a failure and Close: %v", left)
			}
		})
	}
}

// A run cut short on disk is an error of the iteration, not a shorter list.
func TestTruncatedRun(t *testing.T) {
	dir := t.TempDir()
	s := New(Options{Dir: dir, MemoryBudget: 10 * 32})
	defer s.Close()
	for _, id := range randomIDs(3, 30, 0) {
		if err := s.Add(id); err != nil {
			t.Fatal(err)
		}
	}
	runs := runsIn(t, dir)
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3", len(runs))
	}
	if err := os.Truncate(dir+"/"+runs[1], 5*32+7); err != nil {
		t.Fatal(err)
	}
	it, err := s.Sorted()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		n++
	}
	if err := it.Err(); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("iteration ended after %d IDs with %v, want a truncated run", n, err)
	}
}

// Add after Sorted fails, and so does a second Sorted.
func TestAddAfterSorted(t *testing.T) {
	s := New(Options{Dir: t.TempDir()})
	defer s.Close()
	if _, err := s.Sorted(); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ID{1}); !errors.Is(err, ErrSorted) {
		t.Errorf("Add after Sorted: %v, want ErrSorted", err)
	}
	if _, err := s.Sorted(); !errors.Is(err, ErrSorted) {
		t.Errorf("second Sorted: %v, want ErrSorted", err)
	}
}

// Records larger than an ID sort as byte strings, whole: records that
// share their first 32 bytes are ordered by the rest, and only identical
// records are merged, in memory and across runs and merges alike.
func TestRecordsLargerThanAnID(t *testing.T) {
	const size = 80
	tests := []struct {
		name       string
		n, perRun  int
		wantMerges int
	}{
		{name: "in memory", n: 300, perRun: 1000},
		{name: "runs", n: 300, perRun: 37},
		{name: "merges of runs", n: 3000, perRun: 20, wantMerges: 2},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 2))
			prefixes := randomIDs(uint64(i), 7, 0) // few prefixes: many records share one
			var recs [][]byte
			for range tc.n {
				rec := make([]byte, size)
				copy(rec, prefixes[rng.IntN(len(prefixes))][:])
				rec[40] = byte(rng.IntN(5)) // few tails: some records repeat whole
				recs = append(recs, rec)
			}
			dir := t.TempDir()
			s := New(Options{Dir: dir, MemoryBudget: tc.perRun * size, RecordSize: size})
			defer s.Close()
			for _, rec := range recs {
				if err := s.AddRecord(rec); err != nil {
					t.Fatal(err)
				}
			}
			it, err := s.Sorted()
			if err != nil {
				t.Fatal(err)
			}
			var got [][]byte
			for it.Next() {
				if it.ID() != ID(it.Record()[:IDSize]) {
					t.Fatalf("ID() is not the record's first %d bytes", IDSize)
				}
				got = append(got, slices.Clone(it.Record()))
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(recs)
			slices.SortFunc(want, bytes.Compare)
			want = slices.CompactFunc(want, bytes.Equal)
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Errorf("got %d records, want the %d of an in-memory sort", len(got), len(want))
			}
			if s.stats.merges != tc.wantMerges {
				t.Errorf("%d intermediate merges, want %d", s.stats.merges, tc.wantMerges)
			}
		})
	}
}

// A record of the wrong size is refused, and so is an ID added to a
// sorter of larger records.
func TestRecordOfTheWrongSize(t *testing.T) {
	s := New(Options{Dir: t.TempDir(), RecordSize: 40})
	defer s.Close()
	if err := s.AddRecord(make([]byte, 39)); err == nil {
		t.Error("a 39-byte record was added to a sorter of 40-byte records")
	}
	if err := s.Add(ID{}); err == nil {
		t.Error("an ID was added to a sorter of 40-byte records")
	}
}
