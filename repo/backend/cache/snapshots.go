package cache

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
)

// ETagLister is implemented by storage whose listings tell each object's
// ETag (S3). The ETag of an object written with one PUT is the MD5 of its
// content, so a listing proves a copy current (or not) without reading
// the object: a snapshot record is cached only where the storage has
// this.
type ETagLister interface {
	// ListETags is repo.Backend's List with each object's ETag.
	ListETags(ctx context.Context, t repo.FileType, fn func(name string, size int64, etag string) error) error
}

// A snapshot record, unlike an index file or a pack, is not named by its
// hash: nightjar tag writes a changed record under the same name. So a
// copy of one is used only when the listing just made says the bucket
// holds exactly those bytes: the ETag it gives is the MD5 of the copy.
// Storage whose ETags are not the MD5 of the content (a multipart upload,
// some kinds of server-side encryption) never matches, and every record
// is read from it, as without the cache. A listing vouches for one read of
// each record it names: a later read, with no listing in between, asks
// the storage.

// snapshotPath returns where the copy of the snapshot record name lives,
// "" when there is none to keep (not attached, a name that is no object's).
func (b *Backend) snapshotPath(name string) string {
	dir := b.dir.Load()
	if dir == nil || !repo.ValidObjectName(name) {
		return ""
	}
	return filepath.Join(*dir, string(repo.SnapshotFile), name)
}

// etagLister returns the storage's ETagLister, when it has one.
func (b *Backend) etagLister() (ETagLister, bool) {
	return repo.Capability[ETagLister](b.Backend)
}

// listSnapshots lists the snapshot records with their ETags, which
// replace those of earlier listings, and removes the copies of records
// that are gone.
func (b *Backend) listSnapshots(ctx context.Context, lister ETagLister, fn func(name string, size int64) error) error {
	dir := filepath.Join(*b.dir.Load(), string(repo.SnapshotFile))
	listed := map[string]bool{}
	etags := map[string]string{}
	began := time.Now()
	err := lister.ListETags(ctx, repo.SnapshotFile, func(name string, size int64, etag string) error {
		listed[name] = true
		etags[name] = normalETag(etag)
		return fn(name, size)
	})
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.snapshotETags = etags
	b.mu.Unlock()
	b.prune(dir, listed, began)
	return nil
}

// normalETag is an ETag without its quotes, in lower case.
func normalETag(etag string) string {
	return strings.ToLower(strings.Trim(etag, `"`))
}

// takeETag returns the ETag the last listing gave the record name, and
// forgets it: it vouches for one read.
func (b *Backend) takeETag(name string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	etag, ok := b.snapshotETags[name]
	delete(b.snapshotETags, name)
	return etag, ok
}

// loadSnapshot reads the snapshot record h whole: from its copy when the
// last listing's ETag is the copy's MD5, else from the storage, keeping a
// copy.
func (b *Backend) loadSnapshot(ctx context.Context, h repo.Handle, p string) ([]byte, error) {
	if etag, ok := b.takeETag(h.Name); ok {
		if data, err := os.ReadFile(p); err == nil && md5Hex(data) == etag {
			return data, nil
		}
	}
	data, err := b.Backend.Load(ctx, h, 0, -1)
	if err != nil {
		if errors.Is(err, repo.ErrNotFound) {
			b.drop(p)
		}
		return nil, err
	}
	b.store(p, data)
	return data, nil
}

func md5Hex(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}
