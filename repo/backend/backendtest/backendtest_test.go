package backendtest_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// A Faulty with no faults set up is a conforming backend.
func TestFaultyConforms(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) repo.Backend { return backendtest.NewFaulty(memory.New()) })
}

func TestStreamingConforms(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) repo.Backend { return backendtest.NewStreaming(memory.New()) })
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
