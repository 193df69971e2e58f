// Package limit caps the bytes per second a repository writes to and reads
// from its storage (--limit-upload, --limit-download, and a repository's
// upload_bandwidth and download_bandwidth in the config). Wrap puts the caps
// around any backend: the writes of Save and of pack streams, and the reads
// of Load and LoadInto, draw on one budget each, shared by every goroutine.
//
// It lives under repo/backend, not in backup/limit (which caps a backup's
// reading of its sources), because package repo and the backends must not
// import backup.
package limit
