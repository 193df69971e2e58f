//go:build linux

package e2e

import (
	"debug/elf"
	"path/filepath"
	"testing"
)

// TestStaticBinary: the binary users get (CGO_ENABLED=0 go build, as the
// README and quickstart.sh build it) is one static file, with no program
// interpreter and no shared library, and it backs up, restores and checks.
// Under go test -race the other tests run a race-detecting build, which
// needs cgo; this one keeps the static build tested.
func TestStaticBinary(t *testing.T) {
	t.Parallel()
	bin := sharedBinary(t, staticBinary)

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("read the binary: %v", err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is linked dynamically", prog.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}

	e := newEnv(t)
	e.bin = bin
	e.initWithBinary()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, filepath.Join(src, "sub"), 0o755)
	writeRandom(t, filepath.Join(src, "big.bin"), 1, 3<<20)
	writeFile(t, filepath.Join(src, "sub", "note.txt"), "static and whole\n", 0o640)
	want := scanTree(t, src)
	e.backup(exitOK, src)
	target := filepath.Join(e.dir, "restore")
	e.expect(exitOK, "restore", "latest", "--target", target, "--verify")
	compareTrees(t, want, scanTree(t, filepath.Join(target, src)), isRoot())
	if rep, _ := e.check("--read-data"); len(rep.Problems) != 0 {
		t.Errorf("check finds %+v", rep.Problems)
	}
}
