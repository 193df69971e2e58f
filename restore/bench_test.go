package restore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/restore"
)

// BenchmarkRestoreSmallFiles restores 2000 files of 1 KiB in 40 folders of
// two levels: the cost of the file system calls per entry dominates.
func BenchmarkRestoreSmallFiles(b *testing.B) {
	t := &testing.T{}
	bl := newBuilder(t)
	var top []repo.Node
	for i := range 20 {
		name := fmt.Sprintf("d%02d", i)
		var subs []repo.Node
		for _, sub := range []string{"a", "b"} {
			var files []repo.Node
			for j := range 50 {
				files = append(files, bl.file(fmt.Sprintf("/%s/%s/f%02d", name, sub, j), randomBytes(uint64(i*1000+j), 1024)))
			}
			subs = append(subs, bl.dir(sub, files...))
		}
		top = append(top, bl.dir(name, subs...))
	}
	s := bl.snapshot(top...)
	base := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		target := filepath.Join(base, fmt.Sprint(i))
		if _, err := restore.Run(context.Background(), bl.r, s, restore.Options{Target: target}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := os.RemoveAll(target); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
