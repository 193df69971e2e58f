package buildbin

import (
	"context"
	"fmt"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/chunker"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// CreateRepository creates an encrypted repository in the local folder
// dir, as nightjar init does (the same chunk sizes), except that its key
// is derived with repotest.FastKDF instead of repo.DefaultKDF. Every run
// of the binary that opens a repository derives its key with the
// parameters stored in the key file: with the default ones that costs
// about 2 s of processor time and 300 MiB in a race-detecting build, with
// these a few milliseconds. End-to-end tests whose subject is not init
// (or create_if_missing) start from such a repository, so that the
// derivation does not dominate their time.
func CreateRepository(dir, password string) error {
	be, err := local.Create(dir)
	if err != nil {
		return err
	}
	cp := chunker.DefaultParams
	r, err := repo.Init(context.Background(), be, []byte(password), repo.InitOptions{
		KDF:     repotest.FastKDF,
		Chunker: repo.ChunkerParams{Min: cp.Min, Avg: cp.Avg, Max: cp.Max},
	})
	if err != nil {
		return fmt.Errorf("create test repository: %w", err)
	}
	r.Close()
	return nil
}
