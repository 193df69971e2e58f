package s3

import (
	"testing"
	"time"
)

// SetTempDir makes b's pack streams wait in dir, for tests that look there.
func (b *Backend) SetTempDir(dir string) { b.tempDir = dir }

// MapError is mapError, for the table test of the mapping.
var MapError = mapError

// ProfileRegion is the region of profile in the config file, for the test
// of the parser.
func ProfileRegion(file, profile string) string { return profileValue(file, profile, "region") }

// SetReadAhead gives b a read-ahead of windows of window bytes holding at
// most budget bytes, for tests that need a few small windows.
func (b *Backend) SetReadAhead(window, budget int64) { b.readAhead = newReadAhead(window, budget) }

// ReadAheadHeld is the bytes b's read-ahead windows hold or reserve.
func (b *Backend) ReadAheadHeld() int64 { return b.readAhead.held() }

// OnReadAheadWait makes b call fn each time a read waits for another
// read's fetch of the same window.
func (b *Backend) OnReadAheadWait(fn func()) {
	b.readAhead.mu.Lock()
	b.readAhead.onWait = fn
	b.readAhead.mu.Unlock()
}

// PlanCounts is the planned spans b's read-ahead fetched, and the planned
// reads that went to the server alone for want of room.
func (b *Backend) PlanCounts() (fetched, alone int) {
	fetched, alone, _ = b.readAhead.planCounts()
	return fetched, alone
}

// SpansDropped is the planned spans b's read-ahead dropped for room
// before their last planned read.
func (b *Backend) SpansDropped() int {
	_, _, dropped := b.readAhead.planCounts()
	return dropped
}

// SetPartSize makes the parts of multipart uploads size bytes until t
// ends, for tests of uploads of several parts.
func SetPartSize(t testing.TB, size uint64) {
	old := partSize
	partSize = size
	t.Cleanup(func() { partSize = old })
}

// SetResponseHeaderTimeout makes the backends made until t ends wait d
// for the headers of an answer.
func SetResponseHeaderTimeout(t testing.TB, d time.Duration) {
	old := responseHeaderTimeout
	responseHeaderTimeout = d
	t.Cleanup(func() { responseHeaderTimeout = old })
}

// BucketLookup is bucketLookup, for the test of the values it takes.
var BucketLookup = bucketLookup

var RetryablePut = retryablePut

// CredentialProcessError is the error of a failed credential_process of
// profile.
func CredentialProcessError(profile string, err error) error {
	return &credentialProcessError{profile: profile, err: err}
}

// PaceError is a bandwidth cap's wait that failed with err.
func PaceError(err error) error { return &paceError{err} }
