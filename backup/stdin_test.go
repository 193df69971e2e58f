package backup

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/restore"
)

// A stream is stored as one file at the snapshot's root, and restores
// bit-identical; a stream that ends in an error saves no snapshot.
func TestStream(t *testing.T) {
	ctx := context.Background()
	data := make([]byte, 700<<10) // several chunks of repotest.SmallChunks
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	errDumpFailed := errors.New("pg_dump exited with status 3")
	cases := []struct {
		name    string
		src     io.Reader
		wantErr error
	}{
		{"a whole stream", bytes.NewReader(data), nil},
		{"an empty stream", bytes.NewReader(nil), nil},
		{"a stream cut short by its producer", io.MultiReader(bytes.NewReader(data[:300<<10]), errReader{errDumpFailed}), errDumpFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := repotest.New(t, memory.New())
			if err := r.LoadIndex(ctx); err != nil {
				t.Fatal(err)
			}
			res, err := Stream(ctx, r, c.src, StreamOptions{Name: "db.sql", Tags: []string{"job:db"}})
			snaps, lerr := r.Snapshots(ctx)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("Stream = %v, want %v", err, c.wantErr)
				}
				if len(snaps) != 0 {
					t.Fatalf("a stream that failed saved %d snapshots", len(snaps))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(snaps) != 1 || len(res.Snapshot.Paths) != 1 || res.Snapshot.Paths[0] != "/db.sql" {
				t.Fatalf("snapshot paths %q, %d snapshots: want one of /db.sql", res.Snapshot.Paths, len(snaps))
			}
			want := data
			if c.name == "an empty stream" {
				want = nil
			}
			if s := res.Snapshot.Summary; s.BytesRead != int64(len(want)) || s.TotalSize != int64(len(want)) || s.FilesNew != 1 {
				t.Errorf("summary %+v: want %d bytes in one new file", s, len(want))
			}
			target := t.TempDir()
			if _, err := restore.Run(ctx, r, res.Snapshot, restore.Options{Target: target, Verify: true}); err != nil {
				t.Fatalf("restore: %v", err)
			}
			got, err := os.ReadFile(filepath.Join(target, "db.sql"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("restored %d bytes, not the %d streamed", len(got), len(want))
			}
			fi, err := os.Stat(filepath.Join(target, "db.sql"))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("restored mode %v, want 0600", fi.Mode().Perm())
			}
		})
	}
}

func TestStreamRefusesNamesWithAPath(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b", "/db.sql"} {
		if err := ValidStreamName(name); err == nil {
			t.Errorf("ValidStreamName(%q) = nil", name)
		}
	}
	if err := ValidStreamName("mydb.sql"); err != nil {
		t.Errorf("ValidStreamName(mydb.sql) = %v", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
