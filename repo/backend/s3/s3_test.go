package s3_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// config returns the Config of prefix in bucket on srv.
func config(t *testing.T, srv *s3test.Server, bucket, prefix string) s3.Config {
	t.Helper()
	loc, err := s3.ParseLocation(strings.TrimPrefix(srv.Location(bucket, prefix), "s3:"))
	if err != nil {
		t.Fatal(err)
	}
	return s3.Config{Location: loc, BucketLookup: "path"}
}

func TestConformance(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.MakeBucket(t, "conformance")
	var n atomic.Int64
	backendtest.Run(t, func(t *testing.T) repo.Backend {
		be, err := s3.Create(context.Background(), config(t, srv, "conformance", fmt.Sprintf("repo-%d", n.Add(1))))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { be.Close() })
		return be
	})
}

// The bucket's root is a repository too: no prefix.
func TestConformanceAtBucketRoot(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	var n atomic.Int64
	backendtest.Run(t, func(t *testing.T) repo.Backend {
		// Create makes the bucket.
		be, err := s3.Create(context.Background(), config(t, srv, fmt.Sprintf("root-%d", n.Add(1)), ""))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { be.Close() })
		return be
	})
}
