package memory_test

import (
	"context"
	"testing"

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
