package local

import (
	"context"
	"errors"
	"fmt"
)

// WriteProbe writes a small file into the repository's temporary folder,
// syncs it and removes it: the proof that the repository takes writes now
// (a read-only or full file system, or a folder of another owner, fail
// it). A probe killed on the way leaves a temporary file with a name
// nightjar gives, which prune removes as any leftover of a killed write.
func (b *Backend) WriteProbe(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := b.writeTemp([]byte("nightjar write probe\n"))
	if err != nil {
		return fmt.Errorf("write probe: %w", err)
	}
	name := f.Name()
	closeErr := f.Close()
	if err := errors.Join(closeErr, removeTemp(name)); err != nil {
		return fmt.Errorf("write probe: %w", err)
	}
	return nil
}
