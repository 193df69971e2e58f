//go:build unix

// Command tradeoff measures what chunk size and compression level cost and
// save together: for each pair it runs nightjar's own backup (in this
// process, through the backup and repo packages) of a copy of a data set
// into a fresh repository, applies the benchmark's change (gendata change),
// backs up again, and prints a Markdown table: the first backup's wall and
// CPU seconds (user+sys of this process), the repository's bytes after it,
// the bytes the change added and the repository's bytes at the end.
//
// It is the measurement behind "Every chunk size and level" in
// docs/PERFORMANCE.md.
//
//	go build -o /tmp/gendata ./bench/compare/gendata
//	go run ./bench/tradeoff -data DIR -gendata /tmp/gendata [-work DIR] \
//	    [-avg 256K,1M,4M] [-levels fastest,default,better] [-rounds 1] [-cpuprofile DIR]
//
// Chunk sizes are the average; the minimum is a quarter of it and the
// maximum four times it, as in chunker.DefaultParams.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
)

func main() {
	data := flag.String("data", "", "data set to copy and back up (for the suite's mixed set: $WORK/ab/data of ab.sh)")
	gendata := flag.String("gendata", "", "gendata binary (go build ./bench/compare/gendata)")
	work := flag.String("work", filepath.Join(os.TempDir(), "nightjar-tradeoff"), "scratch folder, emptied first")
	avgs := flag.String("avg", "256K,512K,1M,2M,4M", "average chunk sizes, comma-separated")
	levels := flag.String("levels", "fastest,default,better", "compression levels (off, fastest, default, better), comma-separated")
	rounds := flag.Int("rounds", 1, "rounds; the table shows medians")
	profiles := flag.String("cpuprofile", "", "folder for a CPU profile of each first backup (AVG-LEVEL-ROUND.prof)")
	flag.Parse()
	if err := run(*data, *gendata, *work, *avgs, *levels, *rounds, *profiles); err != nil {
		fmt.Fprintln(os.Stderr, "tradeoff:", err)
		os.Exit(1)
	}
}

// pair is one chunk size and compression level.
type pair struct {
	avg   int
	level repo.Compression
}

// result is one round of one pair.
type result struct {
	wall, cpu         time.Duration
	size, growth, end int64 // after the first backup, added by the second, after it
}

func run(data, gendata, work, avgList, levelList string, rounds int, profiles string) error {
	if data == "" || gendata == "" {
		return errors.New("-data and -gendata are required")
	}
	pairs, err := parsePairs(avgList, levelList)
	if err != nil {
		return err
	}
	// As nightjar backup does (cmd.tuneGCForBackup).
	debug.SetGCPercent(50)
	results := make(map[pair][]result)
	for round := 1; round <= rounds; round++ {
		for _, p := range pairs {
			profile := ""
			if profiles != "" {
				profile = filepath.Join(profiles, fmt.Sprintf("%d-%s-%d.prof", p.avg>>10, p.level, round))
			}
			res, err := measure(context.Background(), data, gendata, work, p, profile)
			if err != nil {
				return fmt.Errorf("avg %s, %s: %w", sizeName(p.avg), p.level, err)
			}
			fmt.Fprintf(os.Stderr, "round %d, avg %s, %s: %.2f s, cpu %.2f s, %s, growth %s\n", round,
				sizeName(p.avg), p.level, res.wall.Seconds(), res.cpu.Seconds(), mb(res.size, 1), mb(res.growth, 2))
			results[p] = append(results[p], res)
		}
	}
	fmt.Printf("Data set %s, %d round(s), medians; chunk sizes avg/4 to avg*4.\n\n", data, rounds)
	fmt.Println("| avg chunk | level | first backup (s) | CPU user+sys (s) | repository after it (MB) | growth after the change (MB) | repository at the end (MB) |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|")
	for _, p := range pairs {
		rs := results[p]
		fmt.Printf("| %s | %s | %.2f | %.2f | %s | %s | %s |\n", sizeName(p.avg), p.level,
			median(rs, func(r result) float64 { return r.wall.Seconds() }),
			median(rs, func(r result) float64 { return r.cpu.Seconds() }),
			mb(int64(median(rs, func(r result) float64 { return float64(r.size) })), 1),
			mb(int64(median(rs, func(r result) float64 { return float64(r.growth) })), 2),
			mb(int64(median(rs, func(r result) float64 { return float64(r.end) })), 1))
	}
	return os.RemoveAll(work)
}

func parsePairs(avgList, levelList string) ([]pair, error) {
	var pairs []pair
	for _, a := range strings.Split(avgList, ",") {
		n, err := humanize.ParseBytes(strings.TrimSpace(a) + "iB")
		if err != nil {
			return nil, fmt.Errorf("chunk size %q: want a size such as 256K or 1M", a)
		}
		for _, l := range strings.Split(levelList, ",") {
			level, err := repo.ParseCompression(strings.TrimSpace(l))
			if err != nil {
				return nil, err
			}
			pairs = append(pairs, pair{int(n), level})
		}
	}
	return pairs, nil
}

// measure copies data into work, backs it up into a new repository with
// p's settings, changes it with gendata and backs it up again. A CPU
// profile of the first backup goes to profile unless it is "".
func measure(ctx context.Context, data, gendata, work string, p pair, profile string) (result, error) {
	if err := os.RemoveAll(work); err != nil {
		return result{}, err
	}
	if err := os.MkdirAll(work, 0o700); err != nil {
		return result{}, err
	}
	src, repoDir := filepath.Join(work, "data"), filepath.Join(work, "repo")
	if out, err := exec.Command("cp", "-a", data, src).CombinedOutput(); err != nil {
		return result{}, fmt.Errorf("copy data: %v: %s", err, out)
	}
	be, err := backend.Create(ctx, "local:"+repoDir)
	if err != nil {
		return result{}, err
	}
	r, err := repo.Init(ctx, be, []byte("tradeoff"), repo.InitOptions{
		Chunker: repo.ChunkerParams{Min: p.avg / 4, Avg: p.avg, Max: p.avg * 4},
	})
	if err != nil {
		return result{}, err
	}
	defer r.Close()
	if err := r.SetCompression(p.level); err != nil {
		return result{}, err
	}
	// Like the suite, start from a warm page cache and a synced disk.
	if err := exec.Command("sync").Run(); err != nil {
		return result{}, err
	}
	stopProfile, err := startProfile(profile)
	if err != nil {
		return result{}, err
	}
	var res result
	cpu0, start := cpuTime(), time.Now()
	_, err = backup.Backup(ctx, r, backup.Options{Paths: []string{src}})
	res.wall, res.cpu = time.Since(start), cpuTime()-cpu0
	stopProfile()
	if err != nil {
		return result{}, fmt.Errorf("first backup: %w", err)
	}
	if res.size, err = dirBytes(repoDir); err != nil {
		return result{}, err
	}
	if out, err := exec.Command(gendata, "change", "-dir", src).CombinedOutput(); err != nil {
		return result{}, fmt.Errorf("gendata change: %v: %s", err, out)
	}
	if _, err := backup.Backup(ctx, r, backup.Options{Paths: []string{src}}); err != nil {
		return result{}, fmt.Errorf("backup after the change: %w", err)
	}
	after, err := dirBytes(repoDir)
	if err != nil {
		return result{}, err
	}
	res.growth, res.end = after-res.size, after
	return res, nil
}

// startProfile starts a CPU profile into path and returns what stops it;
// with path "" it does nothing.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// cpuTime is this process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dirBytes is what du -sb prints for dir: the apparent size of every file
// and folder under it.
func dirBytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	return total, err
}

func median(rs []result, f func(result) float64) float64 {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// mb is n bytes in MB with the given decimals.
func mb(n int64, decimals int) string { return fmt.Sprintf("%.*f", decimals, float64(n)/1e6) }
