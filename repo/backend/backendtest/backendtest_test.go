package backendtest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// A Faulty with no faults set up is a conforming backend.
func TestFaultyConforms(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) repo.Backend { return backendtest.NewFaulty(memory.New()) })
}

func TestStreamingConforms(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) repo.Backend { return backendtest.NewStreaming(memory.New()) })
}

// unwrapping is a wrapper that intercepts nothing and has Unwrap, as a
// retry or metrics wrapper that only counts calls would.
type unwrapping struct{ repo.Backend }

func (u unwrapping) Unwrap() repo.Backend { return u.Backend }

func newLocal(t *testing.T) repo.Backend {
	be, err := local.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// Wrapped backends keep every guarantee and capability of what they wrap:
// the suite's capability tests run (they skip only for a capability that
// the innermost backend lacks).
func TestWrappedBackendsConform(t *testing.T) {
	tests := []struct {
		name string
		new  func(t *testing.T) repo.Backend
	}{
		{"unwrapping over local", func(t *testing.T) repo.Backend { return unwrapping{newLocal(t)} }},
		{"unwrapping over memory", func(t *testing.T) repo.Backend { return unwrapping{memory.New()} }},
		{"faulty over local", func(t *testing.T) repo.Backend { return backendtest.NewFaulty(newLocal(t)) }},
		{"unwrapping over faulty over local", func(t *testing.T) repo.Backend { return unwrapping{backendtest.NewFaulty(newLocal(t))} }},
		{"held packs over local, released", func(t *testing.T) repo.Backend {
			h := backendtest.NewHeldPacks(newLocal(t))
			h.Release()
			return h
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { backendtest.Run(t, tt.new) })
	}
}

// Capability finds the capabilities of the innermost backend through
// wrappers that only unwrap, and a wrapper's own where it intercepts them.
func TestCapabilitiesSurviveWrappers(t *testing.T) {
	inner := newLocal(t)
	faulty := backendtest.NewFaulty(inner)
	tests := []struct {
		name string
		be   repo.Backend
		want repo.Backend // what each capability is found on
	}{
		{"local", inner, inner},
		{"one wrapper", unwrapping{inner}, inner},
		{"two wrappers", unwrapping{unwrapping{inner}}, inner},
		{"an intercepting wrapper", unwrapping{faulty}, faulty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found := map[string]any{}
			found["PackStreamer"], _ = repo.Capability[repo.PackStreamer](tt.be)
			found["BufferLoader"], _ = repo.Capability[repo.BufferLoader](tt.be)
			found["ProcessLocker"], _ = repo.Capability[repo.ProcessLocker](tt.be)
			for name, c := range found {
				if c != any(tt.want) {
					t.Errorf("%s found on %T, want %T", name, c, tt.want)
				}
			}
			if c, _ := repo.Capability[io.Closer](tt.be); c != any(inner) {
				t.Errorf("io.Closer found on %T, want the local backend", c)
			}
		})
	}
	if _, ok := repo.Capability[repo.PackStreamer](unwrapping{memory.New()}); ok {
		t.Error("a PackStreamer found through a wrapper of a backend that has none")
	}
}

// insecure makes an unencrypted repository (no key derivation: fast) in
// be.
func insecure(t *testing.T, be repo.Backend) *repo.Repository {
	t.Helper()
	r, err := repo.Init(context.Background(), be, nil, repo.InitOptions{Insecure: true,
		Chunker: repo.ChunkerParams{Min: 1 << 10, Avg: 4 << 10, Max: 16 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func saveAndFlush(r *repo.Repository, data []byte) error {
	_, err := r.WriteSession(context.Background(), repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		_, err := w.SaveBlob(ctx, repo.DataBlob, r.BlobID(data), data)
		return err
	})
	return err
}

// A repository streams its packs and takes locks through a wrapper that
// only unwraps, and the wrapper's own interception of streams applies.
func TestRepositoryThroughWrappers(t *testing.T) {
	ctx := context.Background()
	t.Run("streams through a wrapper", func(t *testing.T) {
		streaming := backendtest.NewStreaming(memory.New())
		r := insecure(t, unwrapping{streaming})
		if err := saveAndFlush(r, backendtest.RandomBytes(1, 10000)); err != nil {
			t.Fatal(err)
		}
		if got := streaming.Kinds(); len(got) != 1 || got[0] != repo.DataPack {
			t.Errorf("streams started through the wrapper: %v, want one data pack", got)
		}
	})
	t.Run("locks through a wrapper", func(t *testing.T) {
		be := unwrapping{newLocal(t)}
		a := insecure(t, be)
		b, err := repo.Open(ctx, be, repo.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		l, err := a.Lock(ctx, true, "prune")
		if err != nil {
			t.Fatalf("lock through a wrapper: %v", err)
		}
		defer l.Unlock()
		if _, err := b.Lock(ctx, false, "backup"); !errors.Is(err, repo.ErrBusy) {
			t.Errorf("second lock through a wrapper: %v, want ErrBusy", err)
		}
	})
	t.Run("faults apply to streamed packs", func(t *testing.T) {
		faulty := backendtest.NewFaulty(newLocal(t))
		r := insecure(t, unwrapping{faulty})
		faulty.FailSave(repo.PackFile, 1)
		if err := saveAndFlush(r, backendtest.RandomBytes(2, 10000)); !errors.Is(err, backendtest.ErrInjected) {
			t.Errorf("flush with the pack's commit set to fail: %v, want ErrInjected", err)
		}
		if got := faulty.Saves(repo.PackFile); got != 1 {
			t.Errorf("%d pack saves counted, want the one streamed pack", got)
		}
	})
	t.Run("faults apply to loads into buffers", func(t *testing.T) {
		faulty := backendtest.NewFaulty(newLocal(t))
		r := insecure(t, unwrapping{faulty})
		data := backendtest.RandomBytes(3, 10000)
		if err := saveAndFlush(r, data); err != nil {
			t.Fatal(err)
		}
		faulty.CorruptLoads(repo.PackFile, backendtest.FlipByte(100))
		if _, err := r.LoadBlob(ctx, r.BlobID(data)); err == nil {
			t.Error("a blob loaded whole from a pack damaged on the way")
		}
		if faulty.Loads(repo.PackFile) == 0 {
			t.Error("loading a blob did not go through the wrapper's LoadInto")
		}
	})
}

func TestFaultyFailsNthSave(t *testing.T) {
	ctx := context.Background()
	f := backendtest.NewFaulty(memory.New())
	f.FailSave(repo.PackFile, 2)
	for i, name := range []string{"p1", "p2", "p3"} {
		err := f.Save(ctx, repo.Handle{Type: repo.PackFile, Name: name}, []byte(name))
		// Saves of other types do not count.
		if serr := f.Save(ctx, repo.Handle{Type: repo.IndexFile, Name: name}, []byte(name)); serr != nil {
			t.Errorf("index save %s: %v", name, serr)
		}
		wantFail := i == 1
		if wantFail != errors.Is(err, backendtest.ErrInjected) || (!wantFail && err != nil) {
			t.Errorf("save %d: %v, want failure %v", i+1, err, wantFail)
		}
	}
	if _, err := f.Stat(ctx, repo.Handle{Type: repo.PackFile, Name: "p2"}); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("a failed save stored the object: stat = %v", err)
	}
	if got := f.Saves(repo.PackFile); got != 3 {
		t.Errorf("Saves = %d, want 3", got)
	}
}

func TestFaultyFailsNthLoad(t *testing.T) {
	ctx := context.Background()
	f := backendtest.NewFaulty(memory.New())
	h := repo.Handle{Type: repo.SnapshotFile, Name: "s"}
	if err := f.Save(ctx, h, []byte("snapshot")); err != nil {
		t.Fatal(err)
	}
	f.FailLoad(repo.SnapshotFile, 1)
	if _, err := f.Load(ctx, h, 0, -1); !errors.Is(err, backendtest.ErrInjected) {
		t.Errorf("first load: %v, want ErrInjected", err)
	}
	if got, err := f.Load(ctx, h, 0, -1); err != nil || string(got) != "snapshot" {
		t.Errorf("second load: %q, %v; want the object", got, err)
	}
}

func TestFaultyFailsNthStat(t *testing.T) {
	ctx := context.Background()
	f := backendtest.NewFaulty(memory.New())
	h := repo.Handle{Type: repo.ConfigFile, Name: "config"}
	if err := f.Save(ctx, h, []byte("config")); err != nil {
		t.Fatal(err)
	}
	f.FailStat(repo.ConfigFile, 2)
	for i, wantFail := range []bool{false, true, false} {
		_, err := f.Stat(ctx, h)
		if wantFail != errors.Is(err, backendtest.ErrInjected) || (!wantFail && err != nil) {
			t.Errorf("stat %d: %v, want failure %v", i+1, err, wantFail)
		}
	}
}

func TestFaultyCorruptsLoads(t *testing.T) {
	ctx := context.Background()
	f := backendtest.NewFaulty(memory.New())
	h := repo.Handle{Type: repo.PackFile, Name: "p"}
	data := []byte("0123456789")
	if err := f.Save(ctx, h, data); err != nil {
		t.Fatal(err)
	}
	f.CorruptLoads(repo.PackFile, backendtest.FlipByte(5))
	tests := []struct {
		name           string
		offset, length int64
		want           string
	}{
		{"whole", 0, -1, "0123446789"}, // '5' ^ 1 == '4'
		{"range covering it", 4, 3, "446"},
		{"range before it", 0, 5, "01234"},
		{"range after it", 6, -1, "6789"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.Load(ctx, h, tt.offset, tt.length)
			if err != nil || string(got) != tt.want {
				t.Errorf("load %d+%d = %q, %v; want %q", tt.offset, tt.length, got, err, tt.want)
			}
		})
	}
	stored, _ := f.Unwrap().Load(ctx, h, 0, -1)
	if !bytes.Equal(stored, data) {
		t.Errorf("corrupting loads changed the stored object to %q", stored)
	}
	f.Reset()
	if got, _ := f.Load(ctx, h, 0, -1); !bytes.Equal(got, data) {
		t.Errorf("after Reset load = %q, want %q", got, data)
	}
}

func TestFaultyFailsOneObject(t *testing.T) {
	ctx := context.Background()
	f := backendtest.NewFaulty(memory.New())
	lost := repo.Handle{Type: repo.PackFile, Name: "lost"}
	other := repo.Handle{Type: repo.PackFile, Name: "other"}
	for _, h := range []repo.Handle{lost, other} {
		if err := f.Save(ctx, h, []byte("0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	f.FailObject(lost)
	for i := range 3 {
		if _, err := f.Load(ctx, lost, 2, 3); !errors.Is(err, backendtest.ErrInjected) {
			t.Errorf("load %d of the failed object: %v, want the injected fault", i+1, err)
		}
	}
	if got, err := f.Load(ctx, other, 0, -1); err != nil || string(got) != "0123456789" {
		t.Errorf("load of another object = %q, %v; want it whole", got, err)
	}
	f.Reset()
	if got, err := f.Load(ctx, lost, 0, -1); err != nil || string(got) != "0123456789" {
		t.Errorf("after Reset load = %q, %v; want it whole", got, err)
	}
}
