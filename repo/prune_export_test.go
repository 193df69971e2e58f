package repo

// SetRepackSessionBlobs makes repack sessions copy at most n blobs each
// until the returned function restores the limit, so that a test meets
// repacks that span several sessions. Tests using it must not run in
// parallel.
func SetRepackSessionBlobs(n int) (restore func()) {
	old := repackSessionBlobs
	repackSessionBlobs = n
	return func() { repackSessionBlobs = old }
}
