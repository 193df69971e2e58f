package repo_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// racingCreate is storage that saves the config only where none is (as S3's
// conditional PUT does) and holds each config save until two have come,
// so that two Inits both pass their check for a config and both write a
// key before either writes the config: the race of two hosts creating one
// repository at once.
type racingCreate struct {
	*memory.Backend
	arrived sync.WaitGroup
	mu      sync.Mutex
}

func (b *racingCreate) Save(ctx context.Context, h repo.Handle, data []byte) error {
	if h.Type != repo.ConfigFile {
		return b.Backend.Save(ctx, h, data)
	}
	b.arrived.Done()
	b.arrived.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.Backend.Stat(ctx, h); err == nil {
		return repo.ErrAlreadyExists
	}
	return b.Backend.Save(ctx, h, data)
}

// Of two Inits racing on one location, one wins and the other fails with
// ErrAlreadyExists and removes the key it wrote: the repository has one
// key, and opens with the password, in every round.
func TestCreateRaceLeavesAnOpenableRepository(t *testing.T) {
	ctx := context.Background()
	for round := range 10 {
		be := &racingCreate{Backend: memory.New()}
		be.arrived.Add(2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				r, err := repo.Init(ctx, be, []byte(password), repo.InitOptions{KDF: fastKDF, Chunker: testChunker})
				if err == nil {
					r.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, repo.ErrAlreadyExists):
				t.Fatalf("round %d: init: %v, want nil or ErrAlreadyExists", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d inits won, want 1", round, won)
		}
		if keys := names(t, be, repo.KeyFile); len(keys) != 1 {
			t.Errorf("round %d: %d key files, want the winner's only", round, len(keys))
		}
		r, err := repo.Open(ctx, be, repo.OpenOptions{Password: pw(password)})
		if err != nil {
			t.Fatalf("round %d: open after the race: %v", round, err)
		}
		r.Close()
	}
}

// A key that opens with the password but whose master key does not fit the
// config (another repository's key, as a losing creator that crashed
// before removing its key leaves) is skipped, whatever the order keys are
// tried in.
func TestKeyThatDoesNotFitTheConfigIsSkipped(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	initRepo(t, mem)
	for range 5 {
		other := memory.New()
		initRepo(t, other)
		for _, name := range names(t, other, repo.KeyFile) {
			data, err := other.Load(ctx, repo.Handle{Type: repo.KeyFile, Name: name}, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			if err := mem.Save(ctx, repo.Handle{Type: repo.KeyFile, Name: name}, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	r, err := repo.Open(ctx, mem, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatalf("open beside 5 keys of other repositories: %v", err)
	}
	r.Close()
	if _, err := repo.Open(ctx, mem, repo.OpenOptions{Password: pw("wrong")}); !errors.Is(err, repo.ErrWrongPassword) {
		t.Errorf("open with a wrong password: %v, want ErrWrongPassword", err)
	}
}
