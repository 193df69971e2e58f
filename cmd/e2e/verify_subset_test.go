//go:build linux

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// check --read-data-subset n/m reads slice n of m of the packs: the m
// slices together read every pack exactly once, each on its own run (1/30
// each day reads the whole repository in a month). PERCENT still works,
// and a subset that is not n/m with 1 <= n <= m exits 2 saying what is
// allowed.
func TestCheckReadDataSubsetSlices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	for i := range 6 { // six backups, each with its own new data: several packs
		writeFile(t, filepath.Join(src, fmt.Sprintf("f%d.txt", i)), strings.Repeat(fmt.Sprintf("file %d\n", i), 20000), 0o644)
		e.backup(exitOK, src)
	}
	all, _ := e.check("--read-data")
	if !all.OK || all.PacksRead != all.Packs || all.Packs < 6 {
		t.Fatalf("check --read-data: %+v, want every one of at least 6 packs read", all)
	}
	for _, m := range []int{1, 3, 7} {
		total := 0
		for n := 1; n <= m; n++ {
			rep, res := e.check("--read-data-subset", fmt.Sprintf("%d/%d", n, m))
			if res.Code != exitOK || !rep.OK {
				t.Fatalf("check --read-data-subset %d/%d\n%s", n, m, res)
			}
			total += rep.PacksRead
		}
		if total != all.Packs {
			t.Errorf("the %d slices of %d read %d packs in all, want each of the %d once", m, m, total, all.Packs)
		}
	}
	if rep, res := e.check("--read-data-subset", "100%"); res.Code != exitOK || rep.PacksRead != all.Packs {
		t.Errorf("check --read-data-subset 100%%: read %d packs, want %d\n%s", rep.PacksRead, all.Packs, res)
	}
	for _, bad := range []string{"0/3", "4/3", "1/0", "a/b", "1/3/5", "0%", "101%"} {
		res := e.expect(exitUsage, "check", "--read-data-subset", bad)
		if !strings.Contains(res.Stderr, "n/m") || !strings.Contains(res.Stderr, "percentage") || strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 {
			t.Errorf("check --read-data-subset %s: want one line saying n/m or a percentage is allowed\n%s", bad, res)
		}
	}
}
