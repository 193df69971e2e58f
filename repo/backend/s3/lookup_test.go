package s3_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// Each bucket_lookup value reaches the client as its addressing.
func TestBucketLookupValues(t *testing.T) {
	for value, want := range map[string]minio.BucketLookupType{
		"":     minio.BucketLookupAuto,
		"auto": minio.BucketLookupAuto,
		"path": minio.BucketLookupPath,
		"dns":  minio.BucketLookupDNS,
	} {
		if got, err := s3.BucketLookup(value); err != nil || got != want {
			t.Errorf("bucket lookup %q: %v, %v; want %v", value, got, err, want)
		}
	}
}

// Path-style and automatic addressing reach a server on 127.0.0.1 (auto
// takes path style for an IP address). Virtual-host style is not tested
// here: it needs bucket.127.0.0.1 to resolve, which it does not.
func TestBucketLookupAgainstServer(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := context.Background()
	for _, lookup := range []string{"path", "auto"} {
		t.Run(lookup, func(t *testing.T) {
			cfg := config(t, srv, "lookup-"+lookup, "repo")
			cfg.BucketLookup = lookup
			be, err := s3.Create(ctx, cfg)
			if err != nil {
				t.Fatalf("create with bucket lookup %s: %v", lookup, err)
			}
			h := repo.Handle{Type: repo.SnapshotFile, Name: strings.Repeat("8f", 32)}
			data := []byte("saved with bucket lookup " + lookup)
			if err := be.Save(ctx, h, data); err != nil {
				t.Fatal(err)
			}
			if got, err := be.Load(ctx, h, 0, -1); err != nil || !bytes.Equal(got, data) {
				t.Errorf("load: %q, %v; want %q", got, err, data)
			}
			if keys := srv.Keys(t, "lookup-"+lookup, ""); len(keys) != 1 || keys[0] != "repo/snapshots/"+h.Name {
				t.Errorf("keys in the bucket %v, want the one saved", keys)
			}
		})
	}
}
