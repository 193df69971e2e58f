package notify

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Defaults and limits of a Route's delivery settings.
const (
	DefaultTimeout  = 10 * time.Second // one attempt's limit
	MaxTimeout      = 5 * time.Minute
	DefaultAttempts = 3 // attempts in all, the first included
	MaxAttempts     = 10
	// BackoffInitial is the wait before the first retry; each next wait
	// doubles, up to BackoffMax.
	BackoffInitial = time.Second
	BackoffMax     = 30 * time.Second
	// MaxCloseWait bounds how long CloseWait lets a short process (tick)
	// wait for its deliveries.
	MaxCloseWait = 2 * time.Minute
)

// Kinds are the run kinds a route may name; DefaultKinds are those
// webhooks hear of when a route names none.
var (
	Kinds        = []string{pass.KindBackup, pass.KindVerify, pass.KindRetention, pass.KindPrune, pass.KindDrill}
	DefaultKinds = []string{pass.KindBackup}
)

// Route says where the runs of one job are told.
type Route struct {
	Webhooks    []string      // URLs that get a JSON document for each event of the runs of Kinds
	Healthcheck string        // base URL of the job's dead man's switch, pinged for backup runs only; "": none
	Kinds       []string      // run kinds webhooks hear of; empty: DefaultKinds
	Timeout     time.Duration // one attempt's limit; 0: DefaultTimeout
	Attempts    int           // attempts in all; 0: DefaultAttempts
}

// Routes are the routes of the jobs the pass runs, by job name.
type Routes map[string]Route

// Empty reports whether the route sends nothing.
func (r Route) Empty() bool { return len(r.Webhooks) == 0 && r.Healthcheck == "" }

func (r Route) timeout() time.Duration {
	if r.Timeout <= 0 {
		return DefaultTimeout
	}
	return r.Timeout
}

func (r Route) attempts() int {
	if r.Attempts <= 0 {
		return DefaultAttempts
	}
	return min(r.Attempts, MaxAttempts)
}

// hears reports whether the route's webhooks hear of runs of kind.
func (r Route) hears(kind string) bool {
	if len(r.Kinds) == 0 {
		return slices.Contains(DefaultKinds, kind)
	}
	return slices.Contains(r.Kinds, kind)
}

// Longest is the longest one delivery of the route may take: every
// attempt timing out, with the backoffs between them.
func (r Route) Longest() time.Duration {
	total := time.Duration(r.attempts()) * r.timeout()
	for retry := 1; retry < r.attempts(); retry++ {
		total += Backoff(retry)
	}
	return total
}

// CloseWait is how long a short process should wait in Close for the
// deliveries of these routes: the longest one takes (Route.Longest), at
// most MaxCloseWait; 0 when no route sends anything.
func (rs Routes) CloseWait() time.Duration {
	var longest time.Duration
	for _, r := range rs {
		if !r.Empty() {
			longest = max(longest, r.Longest())
		}
	}
	return min(longest, MaxCloseWait)
}

// Backoff is the wait before retry number retry (1: the first retry):
// BackoffInitial doubling, at most BackoffMax.
func Backoff(retry int) time.Duration {
	d := BackoffInitial
	for i := 1; i < retry && d < BackoffMax; i++ {
		d *= 2
	}
	return min(d, BackoffMax)
}

// ErrBadURL marks a URL that notifications cannot be sent to.
var ErrBadURL = errors.New("not an http:// or https:// URL with a host")

// CheckURL reports whether raw is a URL notifications can go to: http or
// https, with a host. Its error never contains the URL, whose path and
// query may hold a secret.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%w: it does not parse", ErrBadURL)
	case u.Scheme != "http" && u.Scheme != "https":
		scheme := u.Scheme
		if scheme == "" {
			scheme = "none"
		}
		return fmt.Errorf("%w: its scheme is %s", ErrBadURL, scheme)
	case u.Host == "":
		return fmt.Errorf("%w: it names no host", ErrBadURL)
	case u.Fragment != "":
		return fmt.Errorf("%w: it has a #fragment, which is never sent", ErrBadURL)
	}
	return nil
}

// ping returns the healthcheck URL base with suffix ("/start", "/fail"
// or "") appended to its path, keeping its query.
func ping(base, suffix string) string {
	if suffix == "" {
		return base
	}
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + suffix
	u.RawPath = ""
	return u.String()
}
