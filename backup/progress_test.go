package backup

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nightjar-backup/nightjar/backup/filter"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// The figures a backup leaves in its Progress are what it did, and the
// scanner's total is what it backed up: counted with the same excludes,
// and unchanged files count as done without being read.
func TestProgressCountsWhatTheBackupDid(t *testing.T) {
	const sourceBytes = 3<<20 + int64(len("a small file\n")) + 1<<20 + 2 + 2
	cases := []struct {
		name      string
		exclude   []string
		again     bool   // back up a second time, unchanged: the parent has everything
		failOpen  string // this file (below the source) cannot be opened
		wantFiles int64
		wantBytes int64 // the total
		wantDone  int64 // bytes done: read, or unchanged
		wantRead  int64
		skipped   int64
	}{
		{name: "first backup", wantFiles: 5, wantBytes: sourceBytes, wantDone: sourceBytes, wantRead: sourceBytes},
		{name: "unchanged since the parent", again: true, wantFiles: 5, wantBytes: sourceBytes, wantDone: sourceBytes, wantRead: 0},
		{name: "excludes leave files out of the total", exclude: []string{"*.bin"}, wantFiles: 3, wantBytes: 13 + 2 + 2, wantDone: 13 + 2 + 2, wantRead: 13 + 2 + 2},
		{name: "a file that cannot be opened is done and skipped", failOpen: "small.txt", wantFiles: 5, wantBytes: sourceBytes, wantDone: sourceBytes - 13, wantRead: sourceBytes - 13, skipped: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := makeSource(t)
			r := repotest.New(t, memory.New())
			ctx := context.Background()
			opts := Options{Paths: []string{src}, Scan: true}
			if tc.exclude != nil {
				m, err := filter.Compile(tc.exclude)
				if err != nil {
					t.Fatal(err)
				}
				opts.Exclude, opts.Excludes = m, tc.exclude
			}
			if tc.failOpen != "" {
				fail := filepath.Join(src, tc.failOpen)
				opts.FS = &faultFS{FS: OSFS{}, beforeOpen: func(name string) error {
					if name == fail {
						return errors.New("injected")
					}
					return nil
				}}
			}
			if tc.again {
				if _, err := Backup(ctx, r, opts); err != nil {
					t.Fatal(err)
				}
			}
			opts.Progress = &Progress{}
			res, err := Backup(ctx, r, opts)
			if err != nil {
				t.Fatal(err)
			}
			got := opts.Progress.Read()
			if !got.TotalKnown || got.TotalFiles != tc.wantFiles || got.TotalBytes != tc.wantBytes {
				t.Errorf("total: known %v, %d files, %d bytes; want known, %d files, %d bytes", got.TotalKnown, got.TotalFiles, got.TotalBytes, tc.wantFiles, tc.wantBytes)
			}
			if got.FilesDone != tc.wantFiles || got.BytesDone != tc.wantDone || got.BytesRead != tc.wantRead || got.Skipped != tc.skipped {
				t.Errorf("done: %d files, %d bytes, %d read, %d skipped; want %d files, %d bytes, %d read, %d skipped",
					got.FilesDone, got.BytesDone, got.BytesRead, got.Skipped, tc.wantFiles, tc.wantDone, tc.wantRead, tc.skipped)
			}
			if s := res.Snapshot.Summary; got.BytesRead != s.BytesRead || got.BytesAdded != s.BytesAdded || got.Skipped != s.FilesSkipped {
				t.Errorf("progress says %d read, %d added, %d skipped; the summary %d, %d, %d", got.BytesRead, got.BytesAdded, got.Skipped, s.BytesRead, s.BytesAdded, s.FilesSkipped)
			}
			if len(got.Current) != 0 {
				t.Errorf("files still being read after the backup: %q", got.Current)
			}
		})
	}
}

// While a file is read, Read names it and counts what was read of it:
// the figures move during a file, not only between files.
func TestProgressWhileAFileIsRead(t *testing.T) {
	src := makeSource(t)
	big := filepath.Join(src, "big.bin")
	r := repotest.New(t, memory.New())
	held, release := make(chan struct{}), make(chan struct{})
	fsys := &faultFS{FS: OSFS{}, beforeRead: func(name string, call int, _ int64) error {
		if name == big && call == 2 {
			close(held)
			<-release
		}
		return nil
	}}
	prog := &Progress{}
	done := make(chan error, 1)
	go func() {
		_, err := Backup(context.Background(), r, Options{Paths: []string{src}, FS: fsys, Progress: prog})
		done <- err
	}()
	<-held
	got := prog.Read()
	close(release)
	if !slices.Contains(got.Current, big) {
		t.Errorf("current files %q while big.bin is read: want it named", got.Current)
	}
	if got.BytesRead <= 0 || got.BytesRead >= 3<<20 {
		t.Errorf("%d bytes read after the first read of big.bin: want some of its 3 MiB", got.BytesRead)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if after := prog.Read(); after.TotalKnown || after.TotalFiles != 0 {
		t.Errorf("without Scan the total is known %v with %d files: want it unknown", after.TotalKnown, after.TotalFiles)
	}
}
