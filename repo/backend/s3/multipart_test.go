package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// smallPart is S3's smallest part: objects of a few of them go up in
// several parts without writing hundreds of MiB.
const smallPart = 5 << 20

// multipartSize is an object of three whole parts and a short last one.
const multipartSize = 3*smallPart + 12345

// An object larger than the part size goes up in parts, through Save and
// through a pack stream, and comes back whole: bit-identical, listed with
// its size, with the ETag of a multipart upload of four parts.
func TestMultipartSave(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	s3.SetPartSize(t, smallPart)
	ctx := context.Background()
	be, err := s3.Create(ctx, config(t, srv, "multipart", "repo"))
	if err != nil {
		t.Fatal(err)
	}
	be.SetTempDir(t.TempDir())
	saved := backendtest.RandomBytes(3, multipartSize)
	savedName := strings.Repeat("5a", 32)
	if err := be.Save(ctx, repo.Handle{Type: repo.PackFile, Name: savedName}, saved); err != nil {
		t.Fatalf("save of %d bytes in parts: %v", multipartSize, err)
	}
	streamed := backendtest.RandomBytes(4, multipartSize)
	streamedName := strings.Repeat("5b", 32)
	s, err := be.NewPackStream(ctx, repo.DataPack)
	if err != nil {
		t.Fatal(err)
	}
	for rest := streamed; len(rest) > 0; rest = rest[min(len(rest), 1<<20):] {
		if _, err := s.Write(rest[:min(len(rest), 1<<20)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(ctx, streamedName); err != nil {
		t.Fatalf("commit of a %d-byte pack stream in parts: %v", multipartSize, err)
	}

	want := map[string][]byte{savedName: saved, streamedName: streamed}
	for name, data := range want {
		got, err := be.Load(ctx, repo.Handle{Type: repo.PackFile, Name: name}, 0, -1)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("load %s: %d bytes, %v; want the %d bytes saved", name[:2], len(got), err, len(data))
		}
	}
	listed := map[string]int64{}
	err = be.ListETags(ctx, repo.PackFile, func(name string, size int64, etag string) error {
		listed[name] = size
		// S3 names a multipart object's ETag by its number of parts.
		if !strings.HasSuffix(strings.Trim(etag, `"`), "-4") {
			t.Errorf("pack %s has ETag %s: not an upload of 4 parts", name[:2], etag)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(want) || listed[savedName] != multipartSize || listed[streamedName] != multipartSize {
		t.Errorf("listed %v, want both packs of %d bytes", listed, multipartSize)
	}
}

// A multipart save cancelled while its parts go up leaves no object under
// its name and no incomplete upload behind: the upload is aborted, though
// the save's own context has ended.
func TestMultipartCancelLeavesNothing(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	s3.SetPartSize(t, smallPart)
	srv.MakeBucket(t, "cancelled")
	name := strings.Repeat("6c", 32)
	key := "repo/data/6c/" + name
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := srv.Client(t)
	release := make(chan struct{})
	defer close(release)
	var uploadsSeen atomic.Int64
	p, err := faultproxy.Start("http://"+srv.Endpoint, 1, faultproxy.Rule{
		Method: "PUT", PathContains: key, Nth: 2, Times: 1, Fault: faultproxy.Delay, Release: release,
		OnFault: func(string, string) {
			// The upload has begun: the check after the save would see
			// one left behind.
			if uploads, err := incompleteUploads(client, "cancelled"); err == nil {
				uploadsSeen.Store(int64(len(uploads)))
			}
			cancel()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	loc, err := s3.ParseLocation(p.URL() + "/cancelled/repo")
	if err != nil {
		t.Fatal(err)
	}
	be, err := s3.Create(context.Background(), s3.Config{Location: loc, BucketLookup: "path"})
	if err != nil {
		t.Fatal(err)
	}
	err = be.Save(ctx, repo.Handle{Type: repo.PackFile, Name: name}, backendtest.RandomBytes(5, multipartSize))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("save cancelled during its parts: %v, want context.Canceled", err)
	}
	if n := uploadsSeen.Load(); n != 1 {
		t.Fatalf("%d incomplete uploads while the parts went up, want 1", n)
	}
	if keys := srv.Keys(t, "cancelled", ""); len(keys) != 0 {
		t.Errorf("a cancelled multipart save left %v", keys)
	}
	if left, err := incompleteUploads(client, "cancelled"); err != nil || len(left) != 0 {
		t.Errorf("a cancelled multipart save left incomplete uploads %v (%v)", left, err)
	}
}

// incompleteUploads returns the keys of the multipart uploads begun and
// neither completed nor aborted in bucket.
func incompleteUploads(client *minio.Client, bucket string) ([]string, error) {
	var keys []string
	for u := range client.ListIncompleteUploads(context.Background(), bucket, "", true) {
		if u.Err != nil {
			return nil, fmt.Errorf("list incomplete uploads: %w", u.Err)
		}
		keys = append(keys, u.Key)
	}
	return keys, nil
}
