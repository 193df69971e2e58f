package restore_test

import (
	"context"
	"testing"

	"github.com/nightjar-backup/nightjar/backup/filter"
	"github.com/nightjar-backup/nightjar/restore"
)

// A restore's Progress ends with what it restored, of a total that counts
// the files its rules select; with verify it also counts what was read
// back.
func TestRestoreProgress(t *testing.T) {
	cases := []struct {
		name      string
		include   []string
		verify    bool
		wantFiles int64
		wantBytes int64
	}{
		{name: "whole snapshot", wantFiles: 3, wantBytes: 300<<10 + 10 + 5},
		{name: "include rules count only what they select", include: []string{"/dir"}, wantFiles: 1, wantBytes: 10},
		{name: "verify counts what it read back", verify: true, wantFiles: 3, wantBytes: 300<<10 + 10 + 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t)
			snap := b.snapshot(
				b.file("/big", randomBytes(1, 200<<10), randomBytes(2, 100<<10)),
				b.dir("dir", b.file("/dir/b", randomBytes(3, 10))),
				b.file("/small", randomBytes(4, 5)),
			)
			prog := &restore.Progress{}
			opts := restore.Options{Target: t.TempDir(), Verify: tc.verify, Progress: prog}
			if tc.include != nil {
				m, err := filter.Compile(tc.include)
				if err != nil {
					t.Fatal(err)
				}
				opts.Include = m
			}
			if _, err := restore.Run(context.Background(), b.r, snap, opts); err != nil {
				t.Fatal(err)
			}
			got := prog.Read()
			if !got.TotalKnown || got.TotalFiles != tc.wantFiles || got.TotalBytes != tc.wantBytes {
				t.Errorf("total: known %v, %d files, %d bytes; want known, %d files, %d bytes", got.TotalKnown, got.TotalFiles, got.TotalBytes, tc.wantFiles, tc.wantBytes)
			}
			if got.FilesDone != tc.wantFiles || got.BytesDone != tc.wantBytes {
				t.Errorf("done: %d files, %d bytes; want %d files, %d bytes", got.FilesDone, got.BytesDone, tc.wantFiles, tc.wantBytes)
			}
			wantVerified := int64(0)
			if tc.verify {
				wantVerified = tc.wantFiles
			}
			if got.Verifying != tc.verify || got.FilesVerified != wantVerified {
				t.Errorf("verifying %v, %d files verified; want %v, %d", got.Verifying, got.FilesVerified, tc.verify, wantVerified)
			}
		})
	}
}
