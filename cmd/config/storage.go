package config

import (
	"slices"
	"strings"

	"github.com/nightjar-backup/nightjar/backup/limit"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
)

// rawS3 is a repository's s3 table: [repository.NAME.s3], or its dotted
// keys (s3.bucket_lookup = "path").
type rawS3 struct {
	BucketLookup string `toml:"bucket_lookup"`
	Region       string `toml:"region"`
	CAFile       string `toml:"ca_file"`
}

// s3Keys are the keys of a repository's s3 table.
var s3Keys = []string{"bucket_lookup", "region", "ca_file"}

// bucketLookups are the values of s3.bucket_lookup.
var bucketLookups = []string{"auto", "path", "dns"}

// schemes returns the schemes a url may start with; a test adds the ones of
// storage not built into this branch.
var schemes = backend.Schemes

// Location returns where the repository is, for backend.OpenWith: its url,
// or its path.
func (r Repository) Location() string {
	if r.URL != "" {
		return r.URL
	}
	return r.Path
}

// storage reads where a repository is (exactly one of path and url) and the
// settings of its storage.
func (l *loader) storage(key string, raw rawRepository, r *Repository) {
	switch {
	case raw.Path == "" && raw.URL == "":
		l.addf(key+".path", "missing: every repository needs a path (a local folder) or a url (other storage, such as s3:https://host/bucket)")
	case raw.Path != "" && raw.URL != "":
		l.addf(key+".url", "set either path or url, not both")
	case raw.Path != "":
		if scheme, ok := backend.SchemeOf(raw.Path); ok {
			// Taken as a folder, it would be a local repository that
			// looks like a remote one: refused, as -r refuses it.
			l.addf(key+".path", "%q starts with the scheme %q: path is a local folder (for a folder of that name write ./%s; for other storage set url instead)",
				raw.Path, scheme, raw.Path)
		}
	default:
		r.Path = ""
		r.URL = raw.URL
		l.url(key+".url", raw.URL)
	}
	if raw.S3 != nil {
		if scheme, _ := backend.SchemeOf(raw.URL); scheme != "s3" {
			l.addf(key+".s3", "s3 settings apply to a url starting with s3: only")
		}
		r.Options.BucketLookup = raw.S3.BucketLookup
		if raw.S3.BucketLookup != "" && !slices.Contains(bucketLookups, raw.S3.BucketLookup) {
			l.addf(key+".s3.bucket_lookup", "%q is not one of %s", raw.S3.BucketLookup, strings.Join(bucketLookups, ", "))
		}
		r.Options.Region = raw.S3.Region
		r.Options.CAFile = l.abs(raw.S3.CAFile)
	}
	r.Options.UploadLimit = l.rate(key+".upload_bandwidth", raw.UploadBandwidth)
	r.Options.DownloadLimit = l.rate(key+".download_bandwidth", raw.DownloadBandwidth)
}

// url checks that a repository's url names storage nightjar knows, other
// than a local folder (which is path's).
func (l *loader) url(key, url string) {
	scheme, ok := backend.SchemeOf(url)
	var known []string
	for _, s := range schemes() {
		if s != "local" {
			known = append(known, s)
		}
	}
	list := strings.Join(known, ", ")
	if list == "" {
		list = "none in this build"
	}
	switch {
	case !ok:
		l.addf(key, "%q names no storage: a url starts with a scheme (known: %s); for a local folder set path", url, list)
	case scheme == "local":
		l.addf(key, "%q is a local folder: set path instead of url", url)
	case !slices.Contains(known, scheme):
		l.addf(key, "unknown scheme %q (known: %s)", scheme, list)
	case strings.TrimPrefix(url, scheme+":") == "":
		l.addf(key, "%q names no place after the scheme", url)
	case scheme == "s3":
		// The run would refuse it; validate says so first. The message
		// never echoes a location that holds credentials.
		if _, err := s3.ParseLocation(strings.TrimPrefix(url, "s3:")); err != nil {
			l.addf(key, "%v", err)
		}
	}
}

// rate reads a bandwidth cap; "" is no cap.
func (l *loader) rate(key, text string) int64 {
	if text == "" {
		return 0
	}
	rate, err := limit.ParseRate(text)
	if err != nil {
		l.addf(key, "%v", err)
	}
	return rate
}
