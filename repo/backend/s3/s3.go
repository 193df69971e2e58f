package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/nightjar-backup/nightjar/repo"
)

// Config is what opening a bucket needs besides the credentials, which
// come from the environment.
type Config struct {
	Location
	// BucketLookup is "auto" (also ""), "path" or "dns".
	BucketLookup string
	// Region; "" takes AWS_REGION, AWS_DEFAULT_REGION or the profile's,
	// else asks the server.
	Region string
	// CAFile names a PEM file of roots trusted besides the system's.
	CAFile string
}

// partSize is the size of the parts of a multipart upload: an object larger
// than that goes up in parts, which S3 makes visible only when the last is
// in, so that a failed upload leaves nothing. Four times the default pack
// size, so that a pack (16 MiB and the blob that crossed it) is one PUT.
// A variable only so that tests can upload objects of several parts
// without writing hundreds of MiB (S3's smallest part is 5 MiB).
var partSize uint64 = 64 << 20

// The capabilities of a Backend besides repo.Backend.
var (
	_ repo.BufferLoader = (*Backend)(nil)
	_ repo.PackStreamer = (*Backend)(nil)
	_ repo.ObjectTimer  = (*Backend)(nil)
)

// Backend is a repository in a bucket. Safe for concurrent use.
type Backend struct {
	client    *minio.Client
	core      minio.Core
	transport *http.Transport
	loc       Location
	region    string // the region asked for, "" when the server is asked
	// createConfig is set on a backend made by Create until its first
	// config is saved: that save is conditional (If-None-Match), so that of
	// two hosts creating a repository at once only one config stands.
	createConfig atomic.Bool
	tempDir      string     // where streamed packs wait for their Commit; "" is os.TempDir()
	readAhead    *readAhead // windows of packs read, see readahead.go
	// openedConfig is the config object Open read to find the repository,
	// kept for the repository's own read of it, which follows at once:
	// one GET instead of a HEAD and a GET. The first Load of the whole
	// config takes it; every later one asks the server.
	openedConfig atomic.Pointer[[]byte]
	pace         *pacing // the bandwidth caps' waits (PaceTransfers), read by the client's transport
}

// Open opens the repository at cfg. Without a config object the error wraps
// repo.ErrNoRepository; without the bucket, ErrNoBucket.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	b, err := newBackend(cfg)
	if err != nil {
		return nil, err
	}
	config, err := b.Load(ctx, repo.Handle{Type: repo.ConfigFile, Name: "config"}, 0, -1)
	if err == nil {
		b.openedConfig.Store(&config)
		return b, nil
	}
	if errors.Is(err, repo.ErrNotFound) || !isNamed(err) {
		// A 404 stands also for a missing bucket (and, on some servers,
		// for an unknown key), a 400 for a wrong region. A listing's
		// answer names the refusal.
		if _, perr := b.firstKey(ctx); perr != nil {
			return nil, fmt.Errorf("open %s: %w", b.Location(), perr)
		}
	}
	if errors.Is(err, repo.ErrNotFound) {
		return nil, fmt.Errorf("open %s: %w", b.Location(), repo.ErrNoRepository)
	}
	return nil, fmt.Errorf("open %s: %w", b.Location(), err)
}

// isNamed reports whether err wraps one of the package's sentinels.
func isNamed(err error) bool {
	for _, s := range []error{ErrAccessDenied, ErrNoBucket, ErrWrongRegion, ErrExpiredToken, ErrClockSkew, ErrNetwork, ErrServer, ErrUntrusted} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// Create prepares the bucket for a new repository: it makes the bucket
// when missing, and refuses a prefix that holds a repository (an error
// wrapping repo.ErrAlreadyExists) or anything else (repo.ErrNotEmpty).
func Create(ctx context.Context, cfg Config) (*Backend, error) {
	b, err := newBackend(cfg)
	if err != nil {
		return nil, err
	}
	first, err := b.firstKey(ctx)
	if errors.Is(err, ErrNoBucket) {
		err = b.client.MakeBucket(ctx, b.loc.Bucket, minio.MakeBucketOptions{Region: b.region})
		if err != nil && !isOwnBucket(err) {
			return nil, mapError(fmt.Sprintf("create %s: create bucket %q", b.Location(), b.loc.Bucket), err)
		}
		first, err = "", nil
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", b.Location(), err)
	}
	if first != "" {
		if first == joinKey(b.loc.Prefix, "config") {
			return nil, fmt.Errorf("create %s: %w", b.Location(), repo.ErrAlreadyExists)
		}
		if _, err := b.Stat(ctx, repo.Handle{Type: repo.ConfigFile, Name: "config"}); err == nil {
			return nil, fmt.Errorf("create %s: %w", b.Location(), repo.ErrAlreadyExists)
		}
		return nil, fmt.Errorf("create %s: %w (it holds %s)", b.Location(), repo.ErrNotEmpty, first)
	}
	b.createConfig.Store(true)
	return b, nil
}

// firstKey returns the first key under the repository's prefix, or "" when
// there is none; an error wrapping ErrNoBucket when the bucket is missing.
// A listing answers with a body that names the refusal, where a HEAD
// cannot.
func (b *Backend) firstKey(ctx context.Context) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for obj := range b.client.ListObjectsIter(ctx, b.loc.Bucket, minio.ListObjectsOptions{Prefix: b.dir(""), Recursive: true, MaxKeys: 1}) {
		if obj.Err != nil {
			return "", mapError("list", obj.Err)
		}
		return obj.Key, nil
	}
	return "", nil
}

// isOwnBucket reports whether MakeBucket failed because the bucket exists
// already and is ours (another host made it meanwhile).
func isOwnBucket(err error) bool {
	return minio.ToErrorResponse(err).Code == "BucketAlreadyOwnedByYou"
}

// Close closes the idle connections to the server.
func (b *Backend) Close() error {
	b.transport.CloseIdleConnections()
	return nil
}

// Location returns the repository's location in its s3: form.
func (b *Backend) Location() string { return b.loc.String() }

// dir returns the key prefix of the objects of type t ("" for the
// repository's own prefix), ending in '/' unless it is the bucket's root.
func (b *Backend) dir(t repo.FileType) string {
	d := joinKey(b.loc.Prefix, string(t))
	if d == "" {
		return ""
	}
	return d + "/"
}

func joinKey(parts ...string) string {
	var nonEmpty []string
	for _, p := range parts {
		if p != "" {
			nonEmpty = append(nonEmpty, p)
		}
	}
	if len(nonEmpty) == 0 {
		return ""
	}
	return path.Join(nonEmpty...)
}

// key returns the object key of h: the folder layout of a local
// repository, packs in a subfolder named by their first two hex digits.
func (b *Backend) key(h repo.Handle) (string, error) {
	if h.Type == repo.ConfigFile {
		return joinKey(b.loc.Prefix, "config"), nil
	}
	if !repo.ValidObjectName(h.Name) {
		return "", fmt.Errorf("invalid object name %q", h.Name)
	}
	switch h.Type {
	case repo.PackFile:
		if len(h.Name) < 2 {
			return "", fmt.Errorf("invalid pack name %q", h.Name)
		}
		return joinKey(b.loc.Prefix, string(h.Type), h.Name[:2], h.Name), nil
	case repo.KeyFile, repo.IndexFile, repo.SnapshotFile, repo.LockFile, repo.PinFile, repo.ForgetFile, repo.VerifyFile:
		return joinKey(b.loc.Prefix, string(h.Type), h.Name), nil
	}
	return "", fmt.Errorf("unknown object type %q", h.Type)
}

// Save stores data as h with one PUT (multipart past partSize): S3 makes
// an object visible only whole.
func (b *Backend) Save(ctx context.Context, h repo.Handle, data []byte) error {
	return b.put(ctx, h, bytes.NewReader(data), int64(len(data)))
}

// put stores the size bytes of data as h. It retries a failed PUT itself,
// each time with a fresh reader that the client cannot rewind: after a
// dropped connection the transport may still be reading the body of the
// request that failed while the client's own retry rewinds that body (a
// data race inside the client, found under -race with dropped
// connections), so no body is ever sent twice.
func (b *Backend) put(ctx context.Context, h repo.Handle, data io.ReaderAt, size int64) error {
	key, err := b.key(h)
	if err != nil {
		return fmt.Errorf("save %s: %w", h, err)
	}
	if h.Type == repo.ConfigFile {
		b.openedConfig.Store(nil) // no longer the config in the bucket
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", PartSize: partSize}
	conditional := h.Type == repo.ConfigFile && b.createConfig.Load()
	if conditional {
		opts.SetMatchETagExcept("*") // If-None-Match: *
	}
	for attempt := 1; ; attempt++ {
		body := struct{ io.Reader }{io.NewSectionReader(data, 0, size)} // no Seek: the client sends it once
		_, err = b.client.PutObject(ctx, b.loc.Bucket, key, body, size, opts)
		if err == nil || attempt == maxRetries || !retryablePut(err) || !sleepCtx(ctx, putBackoff(attempt)) {
			break
		}
	}
	if h.Type == repo.PackFile {
		b.readAhead.forget(key)
	}
	if conditional {
		if code := minio.ToErrorResponse(err).Code; code == "PreconditionFailed" || code == "ConditionalRequestConflict" {
			return fmt.Errorf("save config: %w (another host created it meanwhile)", repo.ErrAlreadyExists)
		}
		if err == nil {
			b.createConfig.Store(false)
		}
	}
	return mapError("save "+h.String(), err)
}

// Load reads length bytes of h from offset (length < 0: to the end).
func (b *Backend) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if offset < 0 {
		return nil, fmt.Errorf("load %s: negative offset %d", h, offset)
	}
	if h.Type == repo.ConfigFile && offset == 0 && length < 0 {
		if config := b.openedConfig.Swap(nil); config != nil {
			return *config, nil
		}
	}
	if length >= 0 {
		buf := make([]byte, length)
		if err := b.LoadInto(ctx, h, offset, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	key, err := b.key(h)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", h, err)
	}
	body, size, err := b.get(ctx, key, offset, -1)
	if err != nil {
		return nil, mapError("load "+h.String(), err)
	}
	buf := make([]byte, size)
	n, err := io.ReadFull(body, buf)
	body.Close()
	if err != nil {
		if err := b.resume(ctx, key, offset, buf, n, err); err != nil {
			return nil, fmt.Errorf("load %s: %w", h, err)
		}
	}
	return buf, nil
}

// bodyRetries is how many times a read whose body broke off (a dropped
// connection, a truncated answer) is resumed from where it stopped. The
// client retries failed requests itself, but not a body that breaks.
const bodyRetries = 3

// LoadInto fills buf with the len(buf) bytes of h at offset, with one
// ranged GET; a pack's from the read-ahead windows (readahead.go).
func (b *Backend) LoadInto(ctx context.Context, h repo.Handle, offset int64, buf []byte) error {
	key, err := b.key(h)
	if err != nil {
		return fmt.Errorf("load %s: %w", h, err)
	}
	if offset < 0 {
		return fmt.Errorf("load %s: negative offset %d", h, offset)
	}
	if len(buf) == 0 {
		_, err := b.Stat(ctx, h)
		return err
	}
	if h.Type == repo.PackFile {
		served, err := b.readAhead.read(ctx, key, offset, buf, func(ctx context.Context, offset, length int64) ([]byte, error) {
			return b.fetchWindow(ctx, h, key, offset, length)
		})
		if served {
			return err
		}
	}
	body, size, err := b.get(ctx, key, offset, int64(len(buf)))
	if err != nil {
		return mapError("load "+h.String(), err)
	}
	if size != int64(len(buf)) {
		body.Close()
		return fmt.Errorf("load %s: %d bytes at %d asked for, %d there", h, len(buf), offset, size)
	}
	n, err := io.ReadFull(body, buf)
	body.Close()
	if err != nil {
		if err := b.resume(ctx, key, offset, buf, n, err); err != nil {
			return fmt.Errorf("load %s: %w", h, err)
		}
	}
	return nil
}

// resume fills buf[n:] after a body broke off with err, asking again for
// the rest up to bodyRetries times.
func (b *Backend) resume(ctx context.Context, key string, offset int64, buf []byte, n int, err error) error {
	for range bodyRetries {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		body, size, gerr := b.get(ctx, key, offset+int64(n), int64(len(buf)-n))
		if gerr != nil {
			return mapError("read again", gerr)
		}
		if size != int64(len(buf)-n) {
			body.Close()
			return fmt.Errorf("object changed while read: %d bytes left, %d expected", size, len(buf)-n)
		}
		var m int
		m, err = io.ReadFull(body, buf[n:])
		body.Close()
		n += m
		if err == nil {
			return nil
		}
	}
	return mapError(fmt.Sprintf("read (%d tries)", bodyRetries+1), err)
}

// get starts a GET of length bytes at offset (length < 0: to the end) and
// returns the body and how many bytes it holds. A range past the end fails.
func (b *Backend) get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, int64, error) {
	var opts minio.GetObjectOptions
	switch {
	case length > 0:
		if err := opts.SetRange(offset, offset+length-1); err != nil {
			return nil, 0, err
		}
	case offset > 0:
		if err := opts.SetRange(offset, 0); err != nil {
			return nil, 0, err
		}
	}
	body, info, _, err := b.core.GetObject(ctx, b.loc.Bucket, key, opts)
	if err != nil {
		return nil, 0, err
	}
	return body, info.Size, nil
}

// Stat returns the size of h.
func (b *Backend) Stat(ctx context.Context, h repo.Handle) (int64, error) {
	key, err := b.key(h)
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", h, err)
	}
	info, err := b.client.StatObject(ctx, b.loc.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return 0, mapError("stat "+h.String(), err)
	}
	return info.Size, nil
}

// ModTime returns when h was stored, by the server's clock (prune keeps
// young unindexed packs by it).
func (b *Backend) ModTime(ctx context.Context, h repo.Handle) (time.Time, error) {
	key, err := b.key(h)
	if err != nil {
		return time.Time{}, fmt.Errorf("stat %s: %w", h, err)
	}
	info, err := b.client.StatObject(ctx, b.loc.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return time.Time{}, mapError("stat "+h.String(), err)
	}
	return info.LastModified, nil
}

// List calls fn for each object of type t. Keys that do not fit the layout
// (other tools' objects, bad names) are not the repository's and are left
// out, as a local folder's stray files are.
func (b *Backend) List(ctx context.Context, t repo.FileType, fn func(name string, size int64) error) error {
	return b.ListETags(ctx, t, func(name string, size int64, _ string) error { return fn(name, size) })
}

// ListETags is List with each object's ETag (the MD5 of its content for
// an object of one PUT), which the local cache compares with its copy of
// a snapshot record (package cache).
func (b *Backend) ListETags(ctx context.Context, t repo.FileType, fn func(name string, size int64, etag string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dir := b.dir(t)
	for obj := range b.client.ListObjectsIter(ctx, b.loc.Bucket, minio.ListObjectsOptions{Prefix: dir, Recursive: true}) {
		if obj.Err != nil {
			return mapError("list "+string(t), obj.Err)
		}
		rel := strings.TrimPrefix(obj.Key, dir)
		name := rel
		if t == repo.PackFile {
			sub, n, ok := strings.Cut(rel, "/")
			if !ok || len(n) < 2 || sub != n[:2] {
				continue
			}
			name = n
		}
		if !repo.ValidObjectName(name) {
			continue
		}
		if err := fn(name, obj.Size, obj.ETag); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Remove deletes h. S3's DELETE succeeds on a missing key, so Remove asks
// first, to report a missing object as repo.ErrNotFound.
func (b *Backend) Remove(ctx context.Context, h repo.Handle) error {
	key, err := b.key(h)
	if err != nil {
		return fmt.Errorf("remove %s: %w", h, err)
	}
	if _, err := b.Stat(ctx, h); err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	return b.remove(ctx, h, key)
}

// Delete removes h whether it exists or not, with one DELETE: for a caller
// to whom a missing object is as good as a removed one (releasing a lock),
// the HEAD that Remove asks first would be a request for nothing.
func (b *Backend) Delete(ctx context.Context, h repo.Handle) error {
	key, err := b.key(h)
	if err != nil {
		return fmt.Errorf("remove %s: %w", h, err)
	}
	return b.remove(ctx, h, key)
}

func (b *Backend) remove(ctx context.Context, h repo.Handle, key string) error {
	if h.Type == repo.ConfigFile {
		b.openedConfig.Store(nil)
	}
	err := b.client.RemoveObject(ctx, b.loc.Bucket, key, minio.RemoveObjectOptions{})
	if h.Type == repo.PackFile {
		b.readAhead.forget(key)
	}
	return mapError("remove "+h.String(), err)
}

// retryablePut reports whether a failed PUT may succeed when sent again:
// the server's 5xx, throttling and timeouts, and every failure of the
// connection (no answer from the server at all) but a certificate that
// does not verify, a credential_process that failed and a bandwidth cap's
// wait that could not be met, which no retry mends.
func retryablePut(err error) bool {
	var process *credentialProcessError
	var paced *paceError
	if untrusted(err) || errors.As(err, &process) || errors.As(err, &paced) {
		return false
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusTooManyRequests:
		return true
	case resp.Code == "SlowDown", resp.Code == "RequestTimeout", resp.Code == "InternalError", resp.Code == "ServiceUnavailable":
		return true
	}
	return resp.StatusCode == 0 && ctxErrNone(err)
}

// ctxErrNone reports whether err is not a cancellation or deadline.
func ctxErrNone(err error) bool {
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// putBackoff is the wait before the attempt after attempt, as the
// client's own (maxRetries): a random part of a cap that doubles from
// 200 ms to at most 1 s (full jitter), so that hosts throttled by one
// bucket at once do not retry in step.
func putBackoff(attempt int) time.Duration {
	return rand.N(min(200*time.Millisecond<<min(attempt-1, 3), time.Second))
}

// sleepCtx waits d, and reports false when ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
