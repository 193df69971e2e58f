package s3_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

func writeFile(name, content string) error { return os.WriteFile(name, []byte(content), 0o600) }

var configHandle = repo.Handle{Type: repo.ConfigFile, Name: "config"}

// oneLine fails t when err is not one line.
func oneLine(t *testing.T, err error) {
	t.Helper()
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q is more than one line", err)
	}
}

// A wrong secret and an unknown key are refused by the server; both are
// ErrAccessDenied.
func TestWrongCredentials(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.MakeBucket(t, "creds")
	for _, tt := range []struct{ name, env, value string }{
		{"wrong secret", "AWS_SECRET_ACCESS_KEY", "not-the-secret-at-all-0000"},
		{"unknown key", "AWS_ACCESS_KEY_ID", "no-such-key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			_, err := s3.Open(context.Background(), config(t, srv, "creds", "repo"))
			if !errors.Is(err, s3.ErrAccessDenied) {
				t.Fatalf("open with a %s: %v, want ErrAccessDenied", tt.name, err)
			}
			oneLine(t, err)
			_, err = s3.Create(context.Background(), config(t, srv, "creds", "repo"))
			if !errors.Is(err, s3.ErrAccessDenied) {
				t.Fatalf("create with a %s: %v, want ErrAccessDenied", tt.name, err)
			}
		})
	}
	if keys := srv.Keys(t, "creds", ""); len(keys) != 0 {
		t.Errorf("refused requests left %v", keys)
	}
}

// A missing bucket is ErrNoBucket; a bucket without a config is no
// repository.
func TestOpenMissing(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	_, err := s3.Open(context.Background(), config(t, srv, "no-such-bucket", "repo"))
	if !errors.Is(err, s3.ErrNoBucket) || errors.Is(err, repo.ErrNoRepository) {
		t.Errorf("open in a missing bucket: %v, want ErrNoBucket", err)
	} else {
		oneLine(t, err)
	}
	srv.MakeBucket(t, "empty")
	_, err = s3.Open(context.Background(), config(t, srv, "empty", "repo"))
	if !errors.Is(err, repo.ErrNoRepository) {
		t.Errorf("open a prefix without config: %v, want ErrNoRepository", err)
	}
}

// Create makes the bucket, refuses a prefix holding a repository or other
// objects, and leaves them as they were.
func TestCreate(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := context.Background()
	be, err := s3.Create(ctx, config(t, srv, "made-by-create", "repo"))
	if err != nil {
		t.Fatalf("create in a missing bucket: %v", err)
	}
	if err := be.Save(ctx, configHandle, []byte("config")); err != nil {
		t.Fatal(err)
	}
	if _, err := s3.Create(ctx, config(t, srv, "made-by-create", "repo")); !errors.Is(err, repo.ErrAlreadyExists) {
		t.Errorf("create over a repository: %v, want ErrAlreadyExists", err)
	}
	if _, err := s3.Open(ctx, config(t, srv, "made-by-create", "repo")); err != nil {
		t.Errorf("open what Create made: %v", err)
	}

	other := srv.Client(t)
	if _, err := other.PutObject(ctx, "made-by-create", "photos/cat.jpg", bytes.NewReader([]byte("cat")), 3, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	before := srv.Keys(t, "made-by-create", "")
	_, err = s3.Create(ctx, config(t, srv, "made-by-create", "photos"))
	if !errors.Is(err, repo.ErrNotEmpty) || !strings.Contains(err.Error(), "photos/cat.jpg") {
		t.Errorf("create in a prefix with other objects: %v, want ErrNotEmpty naming one", err)
	}
	_, err = s3.Create(ctx, config(t, srv, "made-by-create", ""))
	if !errors.Is(err, repo.ErrAlreadyExists) && !errors.Is(err, repo.ErrNotEmpty) {
		t.Errorf("create at the root of a bucket with objects: %v, want ErrNotEmpty", err)
	}
	if after := srv.Keys(t, "made-by-create", ""); !slices.Equal(before, after) {
		t.Errorf("refused creates changed the bucket: %v, then %v", before, after)
	}
	// A prefix that only starts like an existing one is empty.
	if _, err := s3.Create(ctx, config(t, srv, "made-by-create", "repo2")); err != nil {
		t.Errorf("create in repo2 beside repo: %v", err)
	}
}

// Two hosts creating a repository at the same place at once: both find
// the place empty, but only the first config saved stands; the other save
// fails with ErrAlreadyExists, and the config is the first one's.
func TestCreateRace(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := context.Background()
	a, err := s3.Create(ctx, config(t, srv, "race", "repo"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s3.Create(ctx, config(t, srv, "race", "repo"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Save(ctx, configHandle, []byte("config of a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(ctx, configHandle, []byte("config of b")); !errors.Is(err, repo.ErrAlreadyExists) {
		t.Errorf("second host's first config: %v, want ErrAlreadyExists", err)
	}
	got, err := a.Load(ctx, configHandle, 0, -1)
	if err != nil || string(got) != "config of a" {
		t.Errorf("config after the race: %q, %v; want the first host's", got, err)
	}
	// Later saves of the config replace it (the format rewrites it).
	if err := a.Save(ctx, configHandle, []byte("config of a, again")); err != nil {
		t.Errorf("saving the config again: %v", err)
	}
}

// An aborted pack stream leaves nothing in the bucket and nothing in the
// temporary folder; while written, the pack is in no folder's listing.
func TestStreamAbortLeavesNothing(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := context.Background()
	be, err := s3.Create(ctx, config(t, srv, "abort", "repo"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	be.SetTempDir(tmp)
	s, err := be.NewPackStream(ctx, repo.DataPack)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(backendtest.RandomBytes(1, 5<<20)); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
			t.Errorf("a pack being written has a name in %s: %v", tmp, entries)
		}
	}
	s.Abort()
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("an aborted pack left %v in %s", entries, tmp)
	}
	if keys := srv.Keys(t, "abort", ""); len(keys) != 0 {
		t.Errorf("an aborted pack left %v in the bucket", keys)
	}
	if _, err := s.Write([]byte("x")); err == nil {
		t.Error("write after Abort succeeded")
	}
}

// A streamed pack is not held in memory: writing and committing 48 MiB
// allocates a small part of that.
func TestStreamMemory(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := context.Background()
	be, err := s3.Create(ctx, config(t, srv, "memory", "repo"))
	if err != nil {
		t.Fatal(err)
	}
	be.SetTempDir(t.TempDir())
	const size, chunk = 48 << 20, 1 << 20
	data := backendtest.RandomBytes(2, chunk)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := be.NewPackStream(ctx, repo.DataPack)
	if err != nil {
		t.Fatal(err)
	}
	for range size / chunk {
		if _, err := s.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	name := strings.Repeat("ab", 32)
	if err := s.Commit(ctx, name); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("streaming a %d MiB pack allocated %.1f MiB", size>>20, float64(allocated)/(1<<20))
	if allocated > size/4 {
		t.Errorf("streaming a %d MiB pack allocated %d MiB, want under a quarter of it", size>>20, allocated>>20)
	}
	if n, err := be.Stat(ctx, repo.Handle{Type: repo.PackFile, Name: name}); err != nil || n != size {
		t.Errorf("committed pack: %d bytes, %v; want %d", n, err, size)
	}
}

// A server that cannot be reached is ErrNetwork, after the client's
// retries.
func TestUnreachable(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	loc, err := s3.ParseLocation("http://127.0.0.1:1/bucket/repo")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s3.Open(context.Background(), s3.Config{Location: loc, BucketLookup: "path"})
	if !errors.Is(err, s3.ErrNetwork) {
		t.Fatalf("open on a closed port: %v, want ErrNetwork", err)
	}
	oneLine(t, err)
}

// A CA file that cannot be read or holds no certificate is refused before
// any request.
func TestBadCAFile(t *testing.T) {
	notPEM := t.TempDir() + "/ca.pem"
	if err := writeFile(notPEM, "not a certificate\n"); err != nil {
		t.Fatal(err)
	}
	loc, err := s3.ParseLocation("https://127.0.0.1:1/bucket")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{notPEM, notPEM + ".missing"} {
		_, err := s3.Open(context.Background(), s3.Config{Location: loc, CAFile: file})
		if !errors.Is(err, s3.ErrBadCAFile) || !strings.Contains(err.Error(), file) {
			t.Errorf("CA file %s: %v, want ErrBadCAFile naming it", file, err)
		} else {
			oneLine(t, err)
		}
	}
}

// A bad bucket lookup is refused by name with the values allowed.
func TestBadBucketLookup(t *testing.T) {
	loc, err := s3.ParseLocation("https://127.0.0.1:1/bucket")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s3.Open(context.Background(), s3.Config{Location: loc, BucketLookup: "virtual"})
	if err == nil || !strings.Contains(err.Error(), `"virtual" (use auto, path or dns)`) {
		t.Errorf("bucket lookup virtual: %v", err)
	}
}

// ModTime is when the server stored the object, and ErrNotFound once it is
// removed.
func TestModTime(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := context.Background()
	be, err := s3.Create(ctx, config(t, srv, "modtime", "repo"))
	if err != nil {
		t.Fatal(err)
	}
	h := repo.Handle{Type: repo.PackFile, Name: strings.Repeat("cd", 32)}
	if err := be.Save(ctx, h, []byte("pack")); err != nil {
		t.Fatal(err)
	}
	got, err := be.ModTime(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	info, err := srv.Client(t).StatObject(ctx, "modtime", "repo/data/cd/"+h.Name, minio.StatObjectOptions{})
	if err != nil || !got.Equal(info.LastModified) || got.IsZero() {
		t.Errorf("ModTime = %v; the server says %v, %v", got, info.LastModified, err)
	}
	if err := be.Remove(ctx, h); err != nil {
		t.Fatal(err)
	}
	if _, err := be.ModTime(ctx, h); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("ModTime of a removed object: %v, want ErrNotFound", err)
	}
}
