package s3

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ErrBadLocation is the error of an s3: location that cannot be parsed.
var ErrBadLocation = errors.New("bad s3 location")

// locationForms are the forms an s3: location takes, for messages. It
// holds no "://" followed by a host: the command line cuts every URL in a
// message to its host.
const locationForms = "s3:host[:port]/bucket[/prefix], with https:// or http:// (a test server) before the host, https when neither"

// Location is where a repository lives on S3: the endpoint, the bucket and
// the prefix of its objects in it.
type Location struct {
	Endpoint string // host or host:port
	Secure   bool   // https
	Bucket   string
	Prefix   string // without leading or trailing '/'; "" for the bucket's root
}

// String returns the location in its canonical s3: form.
func (l Location) String() string {
	scheme := "https"
	if !l.Secure {
		scheme = "http"
	}
	s := "s3:" + scheme + "://" + l.Endpoint + "/" + l.Bucket
	if l.Prefix != "" {
		s += "/" + l.Prefix
	}
	return s
}

// ParseLocation parses what follows "s3:" in a location.
func ParseLocation(rest string) (Location, error) {
	loc := Location{Secure: true}
	if strings.Contains(rest, "@") {
		// Credentials (KEY:SECRET@host): the location is printed in
		// messages, logs and the state database, so none of it is echoed.
		return Location{}, fmt.Errorf("%w: it holds '@' (user credentials?), which an s3 location may not; credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE and its files", ErrBadLocation)
	}
	fail := func(format string, args ...any) (Location, error) {
		return Location{}, fmt.Errorf("%w s3:%s: %s (use %s)", ErrBadLocation, rest, fmt.Sprintf(format, args...), locationForms)
	}
	s := rest
	switch {
	case strings.HasPrefix(s, "https://"):
		s = strings.TrimPrefix(s, "https://")
	case strings.HasPrefix(s, "http://"):
		s, loc.Secure = strings.TrimPrefix(s, "http://"), false
	case strings.Contains(s, "://"):
		scheme, _, _ := strings.Cut(s, "://")
		return fail("unknown URL scheme %q", scheme)
	}
	host, path, _ := strings.Cut(s, "/")
	if host == "" {
		return fail("no host")
	}
	if strings.ContainsAny(host, "?#") {
		return fail("host %q holds query or fragment parts", host)
	}
	if h, port, err := net.SplitHostPort(host); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fail("bad port %q (1 to 65535)", port)
		}
		if h == "" {
			return fail("no host before the port")
		}
	} else if strings.Count(host, ":") == 1 {
		// "host:" or a port SplitHostPort refused.
		_, port, _ := strings.Cut(host, ":")
		return fail("bad port %q (1 to 65535)", port)
	}
	loc.Endpoint = host
	bucket, prefix, _ := strings.Cut(path, "/")
	if bucket == "" {
		return fail("no bucket")
	}
	if why := badBucketName(bucket); why != "" {
		return fail("bad bucket name %q: %s", bucket, why)
	}
	loc.Bucket = bucket
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		for _, seg := range strings.Split(prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return fail("bad prefix %q: empty, '.' or '..' parts", prefix)
			}
		}
	}
	if strings.ContainsAny(prefix, "?#\x00") {
		return fail("bad prefix %q: '?', '#' or NUL", prefix)
	}
	loc.Prefix = prefix
	return loc, nil
}

// badBucketName says what is wrong with a bucket name by S3's rules, or ""
// when nothing is.
func badBucketName(name string) string {
	if len(name) < 3 || len(name) > 63 {
		return "3 to 63 characters"
	}
	for i, c := range []byte(name) {
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && c != '-' && c != '.' {
			return "lowercase letters, digits, '-' and '.' only"
		}
		if !alnum && (i == 0 || i == len(name)-1) {
			return "must start and end with a letter or digit"
		}
	}
	if strings.Contains(name, "..") {
		return "no two '.' in a row"
	}
	if net.ParseIP(name) != nil {
		return "must not look like an IP address"
	}
	return ""
}
