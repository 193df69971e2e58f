package backup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// BenchmarkBackupSmallFiles backs up 1000 small files into a new in-memory
// repository per iteration: with -benchmem, its allocations per operation
// divided by 1000 are the archiver's allocations per file.
func BenchmarkBackupSmallFiles(b *testing.B) {
	src := b.TempDir()
	for i := range 1000 {
		dir := filepath.Join(src, fmt.Sprintf("d%02d", i/50))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		r := repotest.New(b, memory.New())
		b.StartTimer()
		if _, err := Backup(ctx, r, Options{Paths: []string{src}}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		r.Close()
		b.StartTimer()
	}
}
