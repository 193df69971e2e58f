package status

import (
	"net/url"
	"regexp"
)

// urlPattern finds what looks like a URL in a text.
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// Redact returns text with the credentials of every URL in it removed: its
// userinfo and its query become "REDACTED". A text without URLs comes back
// as it was.
func Redact(text string) string {
	return urlPattern.ReplaceAllStringFunc(text, RedactURL)
}

// RedactURL returns the URL u without its credentials (userinfo and query
// replaced by "REDACTED"); a u that does not parse is replaced whole.
func RedactURL(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return "REDACTED-URL"
	}
	if parsed.User == nil && parsed.RawQuery == "" {
		return u
	}
	if parsed.User != nil {
		parsed.User = url.User("REDACTED")
	}
	if parsed.RawQuery != "" {
		parsed.RawQuery = "REDACTED"
	}
	return parsed.String()
}
