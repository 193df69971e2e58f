package redact

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Marker stands where a secret string was.
const Marker = "[redacted]"

// MinSecret is the shortest secret string a Redactor looks for: a shorter
// one would blot out ordinary words.
const MinSecret = 6

// unparsable stands for an address that names no host.
const unparsable = "(a URL that does not parse)"

// urlPattern finds what looks like a URL in a text: a scheme, "://" and
// everything up to a space or a quote.
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// Redactor removes URLs and the secrets it was made with from texts. Its
// zero value removes URLs only.
type Redactor struct {
	secrets []string // longest first, so that one inside another goes whole
}

// New returns a Redactor of the given secrets; those shorter than
// MinSecret are not looked for.
func New(secrets ...string) Redactor { return Redactor{}.With(secrets...) }

// With returns a Redactor of r's secrets and the given ones.
func (r Redactor) With(secrets ...string) Redactor {
	kept := slices.Clone(r.secrets)
	for _, s := range secrets {
		if len(s) >= MinSecret && !slices.Contains(kept, s) {
			kept = append(kept, s)
		}
	}
	slices.SortFunc(kept, func(a, b string) int { return len(b) - len(a) })
	return Redactor{secrets: kept}
}

// Text returns text with every secret of r replaced by Marker and every
// URL cut to scheme://host/…; a text with neither comes back as it was.
func (r Redactor) Text(text string) string {
	for _, s := range r.secrets {
		text = strings.ReplaceAll(text, s, Marker)
	}
	return urlPattern.ReplaceAllStringFunc(text, func(u string) string {
		trimmed := strings.TrimRight(u, ".,;:!?)]}")
		return URL(trimmed) + u[len(trimmed):]
	})
}

// Text returns text with every URL in it cut to scheme://host/….
func Text(text string) string { return Redactor{}.Text(text) }

// URL returns what of one URL may be shown: its scheme and host (with the
// port), and "/…" when anything followed them; never its userinfo, path,
// query or fragment.
func URL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" {
		return unparsable
	}
	authority, tail, _ := cutAny(rest, "/?#")
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	if authority == "" {
		return unparsable
	}
	if tail != "" && tail != "/" {
		return scheme + "://" + authority + "/…"
	}
	return scheme + "://" + authority
}

// cutAny cuts s before the first of chars: what is before, and what is
// from it on.
func cutAny(s, chars string) (before, from string, found bool) {
	if i := strings.IndexAny(s, chars); i >= 0 {
		return s[:i], s[i:], true
	}
	return s, "", false
}

// OneLine folds s onto one line (every run of white space, line breaks
// included, becomes one space) and cuts it to at most limit bytes at a
// rune boundary, marking a cut with "..."; limit <= 0: no cut.
func OneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if limit <= 0 || len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
