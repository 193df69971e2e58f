package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) repo.Backend { return memory.New() })
}

func TestAbandonLeavesAnUnheldLock(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	h := repo.Handle{Type: repo.LockFile, Name: "lock-1"}
	if _, err := be.SaveHeld(ctx, h, []byte("lock")); err != nil {
		t.Fatal(err)
	}
	be.Abandon(h)
	held, err := be.Held(ctx, h)
	if err != nil || held {
		t.Errorf("abandoned lock: Held = %v, %v; want false, nil", held, err)
	}
	if _, err := be.Stat(ctx, h); err != nil {
		t.Errorf("abandoned lock object is gone: %v", err)
	}
}

// ModTime tells when an object was saved, a time no earlier than the Save
// began, and ErrNotFound once it is removed.
func TestModTimeIsWhenTheObjectWasSaved(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	h := repo.Handle{Type: repo.PackFile, Name: "0123abcd"}
	before := time.Now()
	if err := be.Save(ctx, h, []byte("pack")); err != nil {
		t.Fatal(err)
	}
	got, err := be.ModTime(ctx, h)
	if err != nil || got.Before(before) {
		t.Errorf("ModTime = %v, %v; want a time not before the save began (%v)", got, err, before)
	}
	if err := be.Remove(ctx, h); err != nil {
		t.Fatal(err)
	}
	if _, err := be.ModTime(ctx, h); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("ModTime of a removed object: %v, want ErrNotFound", err)
	}
}
