package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// types are the object types that hold named objects (every type but the
// config, which has one fixed name).
var types = []repo.FileType{repo.KeyFile, repo.PackFile, repo.IndexFile, repo.SnapshotFile, repo.LockFile, repo.PinFile, repo.ForgetFile, repo.VerifyFile}

// RandomBytes returns n pseudo-random bytes fixed by seed.
func RandomBytes(seed uint64, n int) []byte {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}

// name returns a valid object name of type t, unique for i: packs and
// indexes get 64 hex digits as the format names them (so that packs spread
// over their subfolders), the others a shorter name.
func name(t repo.FileType, i int) string {
	switch t {
	case repo.PackFile, repo.IndexFile:
		return fmt.Sprintf("%02x%062x", (i*37)%256, i)
	case repo.ConfigFile:
		return "config"
	}
	return fmt.Sprintf("%s-%04d", strings.TrimSuffix(string(t), "s"), i)
}

// Run checks that the backends made by newBackend keep every guarantee
// documented on repo.Backend, and on its capabilities (repo.BufferLoader,
// repo.RangeOpener, repo.PackStreamer, repo.ProcessLocker) when they have
// them, directly or through wrappers (found with repo.Capability). Each subtest gets a new, empty backend (a repository folder prepared
// for use, without config).
func Run(t *testing.T, newBackend func(t *testing.T) repo.Backend) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, be repo.Backend)
	}{
		{"Location", testLocation},
		{"SaveLoad", testSaveLoad},
		{"SaveReplacesWhole", testSaveReplaces},
		{"SaveCopiesData", testSaveCopies},
		{"LoadRange", testLoadRange},
		{"LoadBeyondEnd", testLoadBeyondEnd},
		{"LoadReturnsOwnMemory", testLoadOwnMemory},
		{"BufferLoader", testBufferLoader},
		{"RangeOpener", testRangeOpener},
		{"PackStreamer", testPackStreamer},
		{"NotFound", testNotFound},
		{"Remove", testRemove},
		{"List", testList},
		{"ListStopsOnError", testListError},
		{"ListSeesOnlyWholeObjects", testListWhole},
		{"InvalidNames", testInvalidNames},
		{"Concurrent", testConcurrent},
		{"ProcessLocker", testProcessLocker},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newBackend(t))
		})
	}
}

// skipUnsupported skips a test of capability what when err says that the
// backend lacks it: a wrapper implements a capability that the backend it
// wraps may lack, and then fails with errors.ErrUnsupported.
func skipUnsupported(t *testing.T, err error, what string) {
	t.Helper()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("wrapped backend does not implement %s: %v", what, err)
	}
}

func mustSave(t *testing.T, be repo.Backend, h repo.Handle, data []byte) {
	t.Helper()
	if err := be.Save(context.Background(), h, data); err != nil {
		t.Fatalf("save %s: %v", h, err)
	}
}

func mustLoad(t *testing.T, be repo.Backend, h repo.Handle) []byte {
	t.Helper()
	data, err := be.Load(context.Background(), h, 0, -1)
	if err != nil {
		t.Fatalf("load %s: %v", h, err)
	}
	return data
}

// listAll returns name -> size of every object of type t.
func listAll(t *testing.T, be repo.Backend, ft repo.FileType) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	err := be.List(context.Background(), ft, func(name string, size int64) error {
		if _, dup := got[name]; dup {
			t.Errorf("list %s: %s listed twice", ft, name)
		}
		got[name] = size
		return nil
	})
	if err != nil {
		t.Fatalf("list %s: %v", ft, err)
	}
	return got
}

func testLocation(t *testing.T, be repo.Backend) {
	if be.Location() == "" {
		t.Error("Location() is empty")
	}
}

func testSaveLoad(t *testing.T, be repo.Backend) {
	ctx := context.Background()
	for i, ft := range append([]repo.FileType{repo.ConfigFile}, types...) {
		t.Run(string(ft), func(t *testing.T) {
			h := repo.Handle{Type: ft, Name: name(ft, i)}
			want := RandomBytes(uint64(i), 1000+i*7919)
			mustSave(t, be, h, want)
			if got := mustLoad(t, be, h); !bytes.Equal(got, want) {
				t.Errorf("load %s: got %d bytes, not the %d saved", h, len(got), len(want))
			}
			size, err := be.Stat(ctx, h)
			if err != nil || size != int64(len(want)) {
				t.Errorf("stat %s = %d, %v; want %d, nil", h, size, err, len(want))
			}
		})
	}
	t.Run("large", func(t *testing.T) {
		h := repo.Handle{Type: repo.PackFile, Name: name(repo.PackFile, 99)}
		want := RandomBytes(99, 5<<20+17)
		mustSave(t, be, h, want)
		if got := mustLoad(t, be, h); !bytes.Equal(got, want) {
			t.Errorf("load %s: got %d bytes, not the %d saved", h, len(got), len(want))
		}
	})
}

// testSaveReplaces: saving a name that exists replaces the object whole,
// for every type, also when it was read before (a backend that caches open
// files or contents must not return the old object).
func testSaveReplaces(t *testing.T, be repo.Backend) {
	tests := []struct {
		name          string
		first, second int
	}{
		{"shorter", 10000, 10},
		{"longer", 10, 10000},
		{"same size", 500, 500},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ft := range append([]repo.FileType{repo.ConfigFile}, types...) {
				h := repo.Handle{Type: ft, Name: name(ft, i)}
				mustSave(t, be, h, RandomBytes(1, tt.first))
				mustLoad(t, be, h)
				if _, err := be.Load(context.Background(), h, 0, 5); err != nil {
					t.Fatalf("load %s: %v", h, err)
				}
				want := RandomBytes(2, tt.second)
				mustSave(t, be, h, want)
				if got := mustLoad(t, be, h); !bytes.Equal(got, want) {
					t.Errorf("%s after replacing: got %d bytes, not the %d of the second save", h, len(got), len(want))
				}
				if got, err := be.Load(context.Background(), h, 0, 5); err != nil || !bytes.Equal(got, want[:5]) {
					t.Errorf("%s after replacing: first 5 bytes %x, %v; want %x", h, got, err, want[:5])
				}
				if size, err := be.Stat(context.Background(), h); err != nil || size != int64(tt.second) {
					t.Errorf("stat %s = %d, %v; want %d", h, size, err, tt.second)
				}
				if ft != repo.ConfigFile {
					if got := listAll(t, be, ft)[h.Name]; got != int64(tt.second) {
						t.Errorf("list %s gives size %d after replacing, want %d", ft, got, tt.second)
					}
				}
			}
		})
	}
}

// testSaveCopies: Save stores the object before it returns, so a caller may
// reuse its buffer at once (the repository's packer does).
func testSaveCopies(t *testing.T, be repo.Backend) {
	h := repo.Handle{Type: repo.PackFile, Name: name(repo.PackFile, 1)}
	buf := RandomBytes(3, 4096)
	want := bytes.Clone(buf)
	mustSave(t, be, h, buf)
	for i := range buf {
		buf[i] = 0
	}
	if got := mustLoad(t, be, h); !bytes.Equal(got, want) {
		t.Error("changing the buffer after Save changed the stored object")
	}
}

func testLoadRange(t *testing.T, be repo.Backend) {
	const size = 100000
	data := RandomBytes(4, size)
	hs := []repo.Handle{
		{Type: repo.PackFile, Name: name(repo.PackFile, 7)},
		{Type: repo.IndexFile, Name: name(repo.IndexFile, 7)},
		{Type: repo.ConfigFile, Name: "config"},
	}
	for _, h := range hs {
		mustSave(t, be, h, data)
	}
	tests := []struct {
		name           string
		offset, length int64
		want           []byte
	}{
		{"whole", 0, -1, data},
		{"whole by length", 0, size, data},
		{"prefix", 0, 10, data[:10]},
		{"middle", 4321, 1234, data[4321 : 4321+1234]},
		{"to the end", size - 8, -1, data[size-8:]},
		{"exact tail", size - 8, 8, data[size-8:]},
		{"last byte", size - 1, 1, data[size-1:]},
		{"one byte", 777, 1, data[777:778]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, h := range hs {
				got, err := be.Load(context.Background(), h, tt.offset, tt.length)
				if err != nil {
					t.Fatalf("load %s at %d+%d: %v", h, tt.offset, tt.length, err)
				}
				if !bytes.Equal(got, tt.want) {
					t.Errorf("load %s at %d+%d: got %d bytes, want %d (or other content)", h, tt.offset, tt.length, len(got), len(tt.want))
				}
			}
		})
	}
}

// testLoadBeyondEnd: Load returns length bytes or fails; it never returns
// fewer bytes than asked for.
func testLoadBeyondEnd(t *testing.T, be repo.Backend) {
	const size = 1000
	h := repo.Handle{Type: repo.PackFile, Name: name(repo.PackFile, 8)}
	mustSave(t, be, h, RandomBytes(5, size))
	tests := []struct {
		name           string
		offset, length int64
	}{
		{"range past the end", size - 10, 20},
		{"offset past the end", size + 10, 5},
		{"offset past the end, to the end", size + 10, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := be.Load(context.Background(), h, tt.offset, tt.length)
			if err == nil {
				t.Errorf("load at %d+%d of a %d-byte object: got %d bytes and no error", tt.offset, tt.length, size, len(got))
			}
		})
	}
}

// testLoadOwnMemory: the caller may change what Load returned (restore
// decrypts in place) without changing the stored object.
func testLoadOwnMemory(t *testing.T, be repo.Backend) {
	h := repo.Handle{Type: repo.PackFile, Name: name(repo.PackFile, 9)}
	want := RandomBytes(6, 4096)
	mustSave(t, be, h, want)
	got, err := be.Load(context.Background(), h, 100, 200)
	if err != nil {
		t.Fatal(err)
	}
	clear(got)
	if again := mustLoad(t, be, h); !bytes.Equal(again, want) {
		t.Error("changing what Load returned changed the stored object")
	}
}

// testBufferLoader: LoadInto reads what Load reads, into the caller's
// buffer, and fails rather than fill a buffer partly.
func testBufferLoader(t *testing.T, be repo.Backend) {
	bl, ok := repo.Capability[repo.BufferLoader](be)
	if !ok {
		t.Skip("backend does not implement repo.BufferLoader")
	}
	ctx := context.Background()
	const size = 100000
	data := RandomBytes(7, size)
	hs := []repo.Handle{
		{Type: repo.PackFile, Name: name(repo.PackFile, 10)},
		{Type: repo.IndexFile, Name: name(repo.IndexFile, 10)},
	}
	for _, h := range hs {
		mustSave(t, be, h, data)
		for _, r := range []struct{ offset, length int }{{0, size}, {4321, 1234}, {size - 1, 1}} {
			buf := make([]byte, r.length)
			err := bl.LoadInto(ctx, h, int64(r.offset), buf)
			skipUnsupported(t, err, "repo.BufferLoader")
			if err != nil {
				t.Fatalf("load %s at %d+%d into a buffer: %v", h, r.offset, r.length, err)
			}
			if !bytes.Equal(buf, data[r.offset:r.offset+r.length]) {
				t.Errorf("load %s at %d+%d into a buffer: other content", h, r.offset, r.length)
			}
		}
		if err := bl.LoadInto(ctx, h, size-10, make([]byte, 20)); err == nil {
			t.Errorf("load %s past its end into a buffer: no error", h)
		}
	}
	missing := repo.Handle{Type: repo.PackFile, Name: name(repo.PackFile, 11)}
	if err := bl.LoadInto(ctx, missing, 0, make([]byte, 1)); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("load a missing object into a buffer: got %v, want ErrNotFound", err)
	}
}

// testPackStreamer: a streamed pack is invisible until Commit, then holds
// exactly what was written; an aborted one leaves nothing.
func testPackStreamer(t *testing.T, be repo.Backend) {
	ps, ok := repo.Capability[repo.PackStreamer](be)
	if !ok {
		t.Skip("backend does not implement repo.PackStreamer")
	}
	ctx := context.Background()
	listed := func() []string {
		var names []string
		if err := be.List(ctx, repo.PackFile, func(name string, _ int64) error {
			names = append(names, name)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return names
	}
	data := RandomBytes(8, 3<<20)
	var committed []string
	for i, kind := range []repo.PackKind{repo.DataPack, repo.TreePack} {
		s, err := ps.NewPackStream(ctx, kind)
		skipUnsupported(t, err, "repo.PackStreamer")
		if err != nil {
			t.Fatal(err)
		}
		for rest := data[i:]; len(rest) > 0; {
			n := min(len(rest), 1+len(rest)/3)
			if _, err := s.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if names := listed(); len(names) != len(committed) {
			t.Errorf("List sees %v before Commit", names)
		}
		h := repo.Handle{Type: repo.PackFile, Name: name(repo.PackFile, 12+i)}
		if err := s.Commit(ctx, h.Name); err != nil {
			t.Fatal(err)
		}
		if got := mustLoad(t, be, h); !bytes.Equal(got, data[i:]) {
			t.Errorf("committed pack of kind %d: %d bytes that differ from the %d written", kind, len(got), len(data)-i)
		}
		committed = append(committed, h.Name)
	}
	a, err := ps.NewPackStream(ctx, repo.TreePack)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write(data[:1000]); err != nil {
		t.Fatal(err)
	}
	a.Abort()
	if names := listed(); !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(committed))) {
		t.Errorf("after two commits and one abort List sees %v, want %v", names, committed)
	}
	bad, err := ps.NewPackStream(ctx, repo.DataPack)
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Commit(ctx, "../escape"); err == nil {
		t.Error("Commit under an invalid name succeeded")
	}
}

func testNotFound(t *testing.T, be repo.Backend) {
	ctx := context.Background()
	for i, ft := range append([]repo.FileType{repo.ConfigFile}, types...) {
		h := repo.Handle{Type: ft, Name: name(ft, i)}
		t.Run(string(ft), func(t *testing.T) {
			if _, err := be.Load(ctx, h, 0, -1); !errors.Is(err, repo.ErrNotFound) {
				t.Errorf("load missing %s: %v, want ErrNotFound", h, err)
			}
			if _, err := be.Load(ctx, h, 10, 10); !errors.Is(err, repo.ErrNotFound) {
				t.Errorf("load range of missing %s: %v, want ErrNotFound", h, err)
			}
			if _, err := be.Stat(ctx, h); !errors.Is(err, repo.ErrNotFound) {
				t.Errorf("stat missing %s: %v, want ErrNotFound", h, err)
			}
			if err := be.Remove(ctx, h); !errors.Is(err, repo.ErrNotFound) {
				t.Errorf("remove missing %s: %v, want ErrNotFound", h, err)
			}
		})
	}
}

func testRemove(t *testing.T, be repo.Backend) {
	ctx := context.Background()
	for i, ft := range types {
		t.Run(string(ft), func(t *testing.T) {
			h := repo.Handle{Type: ft, Name: name(ft, i)}
			keep := repo.Handle{Type: ft, Name: name(ft, i+100)}
			mustSave(t, be, h, []byte("to be removed"))
			mustSave(t, be, keep, []byte("to be kept"))
			if err := be.Remove(ctx, h); err != nil {
				t.Fatalf("remove %s: %v", h, err)
			}
			if _, err := be.Load(ctx, h, 0, -1); !errors.Is(err, repo.ErrNotFound) {
				t.Errorf("load after remove: %v, want ErrNotFound", err)
			}
			if _, err := be.Stat(ctx, h); !errors.Is(err, repo.ErrNotFound) {
				t.Errorf("stat after remove: %v, want ErrNotFound", err)
			}
			if err := be.Remove(ctx, h); !errors.Is(err, repo.ErrNotFound) {
				t.Errorf("second remove: %v, want ErrNotFound", err)
			}
			got := listAll(t, be, ft)
			if _, ok := got[h.Name]; ok {
				t.Errorf("list still shows removed %s", h)
			}
			if _, ok := got[keep.Name]; !ok {
				t.Errorf("removing %s also removed %s", h, keep)
			}
		})
	}
	t.Run("config", func(t *testing.T) {
		h := repo.Handle{Type: repo.ConfigFile, Name: "config"}
		mustSave(t, be, h, []byte("config"))
		if err := be.Remove(ctx, h); err != nil {
			t.Fatalf("remove config: %v", err)
		}
		if _, err := be.Stat(ctx, h); !errors.Is(err, repo.ErrNotFound) {
			t.Errorf("stat after remove: %v, want ErrNotFound", err)
		}
	})
}

func testList(t *testing.T, be repo.Backend) {
	for _, ft := range types {
		if got := listAll(t, be, ft); len(got) != 0 {
			t.Errorf("list %s of an empty backend: %v", ft, got)
		}
	}
	want := map[repo.FileType]map[string]int64{}
	for ti, ft := range types {
		want[ft] = map[string]int64{}
		// Packs: enough names to fall into many subfolders, including
		// the first and the last.
		n := 5
		if ft == repo.PackFile {
			n = 40
		}
		for i := range n {
			nm := name(ft, ti*1000+i)
			if ft == repo.PackFile && i < 2 {
				nm = []string{strings.Repeat("0", 64), strings.Repeat("f", 64)}[i]
			}
			size := int64(ti*100 + i)
			mustSave(t, be, repo.Handle{Type: ft, Name: nm}, RandomBytes(uint64(i), int(size)))
			want[ft][nm] = size
		}
	}
	mustSave(t, be, repo.Handle{Type: repo.ConfigFile, Name: "config"}, []byte("config"))
	for _, ft := range types {
		t.Run(string(ft), func(t *testing.T) {
			got := listAll(t, be, ft)
			for nm, size := range want[ft] {
				gs, ok := got[nm]
				switch {
				case !ok:
					t.Errorf("list %s misses %s", ft, nm)
				case gs != size:
					t.Errorf("list %s gives %s size %d, want %d", ft, nm, gs, size)
				}
			}
			for nm := range got {
				if _, ok := want[ft][nm]; !ok {
					t.Errorf("list %s shows %s, which was not saved as %s", ft, nm, ft)
				}
			}
		})
	}
}

func testListError(t *testing.T, be repo.Backend) {
	for i := range 5 {
		mustSave(t, be, repo.Handle{Type: repo.SnapshotFile, Name: name(repo.SnapshotFile, i)}, []byte("x"))
	}
	stop := errors.New("stop")
	calls := 0
	err := be.List(context.Background(), repo.SnapshotFile, func(string, int64) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) {
		t.Errorf("list whose fn fails returned %v, want fn's error", err)
	}
	if calls != 1 {
		t.Errorf("list called fn %d times after it failed, want 1 call", calls)
	}
}

// testListWhole: List shows only complete objects, also while they are being
// saved.
func testListWhole(t *testing.T, be repo.Backend) {
	const n, size = 24, 256 << 10
	data := RandomBytes(6, size)
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		for i := range n {
			if err := be.Save(ctx, repo.Handle{Type: repo.PackFile, Name: name(repo.PackFile, i)}, data); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("save: %v", err)
			}
			finished = true
		default:
		}
		err := be.List(ctx, repo.PackFile, func(nm string, sz int64) error {
			if sz != size {
				t.Errorf("list shows %s with %d bytes while it is saved; want only whole objects of %d", nm, sz, size)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
	}
	if got := len(listAll(t, be, repo.PackFile)); got != n {
		t.Errorf("list shows %d packs, want %d", got, n)
	}
}

func testInvalidNames(t *testing.T, be repo.Backend) {
	ctx := context.Background()
	names := []string{"../x", "a/b", ".hidden", "", "..", ".", "../../../../../../tmp/nightjar-escape", "x/../../y", "a\x00b"}
	for _, ft := range types {
		for _, nm := range names {
			t.Run(fmt.Sprintf("%s/%q", ft, nm), func(t *testing.T) {
				h := repo.Handle{Type: ft, Name: nm}
				if err := be.Save(ctx, h, []byte("escape")); err == nil {
					t.Errorf("save %q was accepted", nm)
				}
				if _, err := be.Load(ctx, h, 0, -1); err == nil {
					t.Errorf("load %q did not fail", nm)
				}
				if _, err := be.Stat(ctx, h); err == nil {
					t.Errorf("stat %q did not fail", nm)
				}
				if err := be.Remove(ctx, h); err == nil {
					t.Errorf("remove %q did not fail", nm)
				}
			})
		}
	}
	for _, ft := range types {
		if got := listAll(t, be, ft); len(got) != 0 {
			t.Errorf("after rejected saves, list %s shows %v", ft, got)
		}
	}
}

func testConcurrent(t *testing.T, be repo.Backend) {
	ctx := context.Background()
	const workers, each = 8, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				k := w*each + i
				h := repo.Handle{Type: repo.PackFile, Name: name(repo.PackFile, k)}
				want := RandomBytes(uint64(k), 1000+k)
				if err := be.Save(ctx, h, want); err != nil {
					errs <- err
					continue
				}
				got, err := be.Load(ctx, h, 0, -1)
				if err != nil {
					errs <- err
				} else if !bytes.Equal(got, want) {
					errs <- fmt.Errorf("%s: loaded other bytes than saved", h)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := len(listAll(t, be, repo.PackFile)); got != workers*each {
		t.Errorf("list shows %d packs after concurrent saves, want %d", got, workers*each)
	}
}

func testProcessLocker(t *testing.T, be repo.Backend) {
	pl, ok := repo.Capability[repo.ProcessLocker](be)
	if !ok {
		t.Skip("backend does not implement repo.ProcessLocker")
	}
	ctx := context.Background()
	h := repo.Handle{Type: repo.LockFile, Name: name(repo.LockFile, 1)}
	data := []byte("lock content")
	release, err := pl.SaveHeld(ctx, h, data)
	skipUnsupported(t, err, "repo.ProcessLocker")
	if err != nil {
		t.Fatalf("save held: %v", err)
	}
	if got := mustLoad(t, be, h); !bytes.Equal(got, data) {
		t.Errorf("held lock object reads %q, want %q", got, data)
	}
	if _, ok := listAll(t, be, repo.LockFile)[h.Name]; !ok {
		t.Error("held lock object is not listed")
	}
	if held, err := pl.Held(ctx, h); err != nil || !held {
		t.Errorf("held while its holder has it: Held = %v, %v; want true", held, err)
	}
	if err := release(); err != nil {
		t.Fatalf("release: %v", err)
	}
	if held, err := pl.Held(ctx, h); held || (err != nil && !errors.Is(err, repo.ErrNotFound)) {
		t.Errorf("after release: Held = %v, %v; want false or ErrNotFound", held, err)
	}

	plain := repo.Handle{Type: repo.LockFile, Name: name(repo.LockFile, 2)}
	mustSave(t, be, plain, data)
	if held, err := pl.Held(ctx, plain); err != nil || held {
		t.Errorf("object written with Save: Held = %v, %v; want false, nil", held, err)
	}
	missing := repo.Handle{Type: repo.LockFile, Name: name(repo.LockFile, 3)}
	if _, err := pl.Held(ctx, missing); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("Held of a missing lock: %v, want ErrNotFound", err)
	}
}
