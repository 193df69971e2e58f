package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Fault is what a rule does to a request it matches.
type Fault int

const (
	// Delay forwards the request and holds the answer back until the
	// rule's Release channel is closed or its Duration has passed.
	Delay Fault = iota + 1
	// Drop closes the client's connection without forwarding the
	// request: the server never sees it.
	Drop
	// DropAfter forwards the request, then closes the client's
	// connection instead of answering: the server did the work, the
	// client does not know it.
	DropAfter
	// InternalError answers 500 InternalError without forwarding.
	InternalError
	// SlowDown answers 503 SlowDown without forwarding, as S3 does when
	// it throttles.
	SlowDown
	// Truncate forwards the request and sends the answer's status and
	// headers but only half its body, then closes the connection.
	Truncate
)

// String names the fault, for messages.
func (f Fault) String() string {
	switch f {
	case Delay:
		return "delay"
	case Drop:
		return "drop"
	case DropAfter:
		return "drop-after"
	case InternalError:
		return "500"
	case SlowDown:
		return "503-slowdown"
	case Truncate:
		return "truncate"
	}
	return fmt.Sprintf("fault(%d)", int(f))
}

// Rule says which requests get a fault. A request matches when it has the
// Method (any, for "") and its path contains PathContains; when it is the
// Nth request to match (any, for 0, counted whether another rule fired for
// the earlier ones or not), it gets the
// fault with the chance Probability (always, for 0), at most Times times
// (no limit, for 0).
type Rule struct {
	Method       string
	PathContains string
	Nth          int
	Probability  float64
	Times        int
	Fault        Fault
	// Release ends a Delay when it is closed; nil: Duration ends it.
	Release <-chan struct{}
	// Duration of a Delay without Release.
	Duration time.Duration
	// OnFault, when set, is called with the request each time the rule
	// fires, before the fault is done: a test learns that a Delay holds
	// an answer back without waiting for time to pass.
	OnFault func(method, path string)

	matched int // requests matched so far
	fired   int // faults done so far
}

// Counts are what went through the proxy: request bodies in, response
// bodies out (headers not counted).
type Counts struct {
	// Requests by HTTP method.
	Requests map[string]int64
	// BytesIn are the bytes of request bodies forwarded to the server.
	BytesIn int64
	// BytesOut are the bytes of response bodies sent to the client (each
	// counted before it is sent).
	BytesOut int64
	// Faults are the faults done, by kind.
	Faults map[string]int64
	// ByFolder are the requests by method and the folder of the object
	// ("GET data", "PUT locks"; "GET ?list locks" for a listing of locks, "HEAD /" for
	// the bucket), to see which of a tool's requests there are many of.
	ByFolder map[string]int64
}

// Total is the number of requests of every method.
func (c Counts) Total() int64 {
	var n int64
	for _, v := range c.Requests {
		n += v
	}
	return n
}

// Proxy is a running fault proxy.
type Proxy struct {
	target   *url.URL
	listener net.Listener
	server   *http.Server
	client   *http.Client

	mu       sync.Mutex
	rules    []*Rule
	rng      *rand.Rand
	requests map[string]int64
	faults   map[string]int64
	byFolder map[string]int64

	bytesIn, bytesOut atomic.Int64
}

// Start listens on a free loopback port and forwards to target (an
// http:// URL of the server: scheme and host:port; any path is ignored).
// seed seeds the chances of rules with a Probability, so that a run can be
// repeated.
func Start(target string, seed uint64, rules ...Rule) (*Proxy, error) {
	return Listen("127.0.0.1:0", target, seed, rules...)
}

// Listen is Start on the address addr.
func Listen(addr, target string, seed uint64, rules ...Rule) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("fault proxy target %q: %w", target, err)
	}
	if u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("fault proxy target %q: want http://host:port", target)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fault proxy listen: %w", err)
	}
	p := &Proxy{
		target:   u,
		listener: l,
		client: &http.Client{
			Transport: &http.Transport{
				Proxy:               nil,
				DisableCompression:  true,
				MaxIdleConnsPerHost: 64,
			},
			// The client sees the server's redirects, not the proxy.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		requests: make(map[string]int64),
		faults:   make(map[string]int64),
		byFolder: make(map[string]int64),
	}
	p.SetRules(rules...)
	p.server = &http.Server{Handler: p, ReadHeaderTimeout: time.Minute}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

// URL is the proxy's address as http://127.0.0.1:PORT.
func (p *Proxy) URL() string { return "http://" + p.listener.Addr().String() }

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// SetRules replaces the rules; the first rule that fires for a request
// decides its fault. Counts of matches start again from zero.
func (p *Proxy) SetRules(rules ...Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = p.rules[:0]
	for _, r := range rules {
		r.matched, r.fired = 0, 0
		p.rules = append(p.rules, &r)
	}
}

// Counts returns what went through the proxy so far.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Counts{
		Requests: make(map[string]int64, len(p.requests)),
		Faults:   make(map[string]int64, len(p.faults)),
		ByFolder: make(map[string]int64, len(p.byFolder)),
		BytesIn:  p.bytesIn.Load(),
		BytesOut: p.bytesOut.Load(),
	}
	for k, v := range p.requests {
		c.Requests[k] = v
	}
	for k, v := range p.faults {
		c.Faults[k] = v
	}
	for k, v := range p.byFolder {
		c.ByFolder[k] = v
	}
	return c
}

// ResetCounts sets the counts to zero, for counting one step at a time.
func (p *Proxy) ResetCounts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.requests)
	clear(p.faults)
	clear(p.byFolder)
	p.bytesIn.Store(0)
	p.bytesOut.Store(0)
}

// Close stops the proxy and closes its connections; answers held by a
// Delay are cut off.
func (p *Proxy) Close() error {
	err := p.server.Close()
	p.client.CloseIdleConnections()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// pick counts the request and returns the rule that fires for it, or nil.
// Every rule counts the requests it matches, whether an earlier rule fired
// or not, so that Nth counts the same requests whatever the order.
func (p *Proxy) pick(r *http.Request) *Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests[r.Method]++
	p.byFolder[r.Method+" "+folderOf(r)]++
	var fired *Rule
	for _, rule := range p.rules {
		if rule.Method != "" && rule.Method != r.Method {
			continue
		}
		if !strings.Contains(r.URL.Path, rule.PathContains) {
			continue
		}
		rule.matched++
		if fired != nil || rule.Nth != 0 && rule.matched != rule.Nth {
			continue
		}
		if rule.Times != 0 && rule.fired >= rule.Times {
			continue
		}
		if rule.Probability != 0 && p.rng.Float64() >= rule.Probability {
			continue
		}
		rule.fired++
		p.faults[rule.Fault.String()]++
		fired = rule
	}
	return fired
}

// ServeHTTP forwards one request, doing the fault of the rule that fires.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rule := p.pick(r)
	var fault Fault
	if rule != nil {
		fault = rule.Fault
		if rule.OnFault != nil {
			rule.OnFault(r.Method, r.URL.Path)
		}
	}
	switch fault {
	case Drop:
		// Aborting the handler makes the server close the connection
		// without an answer.
		panic(http.ErrAbortHandler)
	case InternalError:
		writeError(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
		return
	case SlowDown:
		writeError(w, r, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
		return
	}

	resp, err := p.forward(r)
	if err != nil {
		writeError(w, r, http.StatusBadGateway, "BadGateway", "fault proxy: "+err.Error())
		return
	}
	defer resp.Body.Close()

	switch fault {
	case DropAfter:
		_, _ = io.Copy(io.Discard, resp.Body)
		panic(http.ErrAbortHandler)
	case Delay:
		if rule.Release != nil {
			select {
			case <-rule.Release:
			case <-r.Context().Done():
				return
			}
		} else {
			t := time.NewTimer(rule.Duration)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
	}

	header := w.Header()
	for k, vs := range resp.Header {
		if hopByHop(k) {
			continue
		}
		header[k] = vs
	}
	if fault == Truncate {
		p.truncate(w, resp)
		return
	}
	if resp.ContentLength >= 0 {
		header.Set("Content-Length", fmt.Sprint(resp.ContentLength))
	}
	w.WriteHeader(resp.StatusCode)
	// Counted as read from the server, before the client is sent them: a
	// client that has the whole body finds it in the counts.
	_, _ = io.Copy(w, &countingReader{r: resp.Body, n: &p.bytesOut})
}

// truncate sends the answer's status, headers and first half of its body,
// then closes the connection, so that the client reads fewer bytes than
// Content-Length promised.
func (p *Proxy) truncate(w http.ResponseWriter, resp *http.Response) {
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(resp.StatusCode)
	half := body[:len(body)/2]
	p.bytesOut.Add(int64(len(half)))
	_, _ = w.Write(half)
	_ = http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// forward sends r to the target with the client's Host header, which its
// signature covers.
func (p *Proxy) forward(r *http.Request) (*http.Response, error) {
	u := *p.target
	u.Path = r.URL.Path
	u.RawPath = r.URL.RawPath
	u.RawQuery = r.URL.RawQuery
	var body io.Reader = http.NoBody
	if r.ContentLength != 0 {
		body = &countingReader{r: r.Body, n: &p.bytesIn}
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), body)
	if err != nil {
		return nil, err
	}
	out.Host = r.Host
	out.ContentLength = r.ContentLength
	for k, vs := range r.Header {
		if hopByHop(k) {
			continue
		}
		out.Header[k] = vs
	}
	return p.client.Do(out)
}

// folderOf names the folder of the object a request is about: the last
// folder of its path that is not a fan-out folder of two hex digits
// (data/ab/abcd... is in data); "?list " and the folder of its prefix for
// a listing ("?list locks"), and "/" for the bucket itself.
func folderOf(r *http.Request) string {
	q := r.URL.Query()
	if r.Method == http.MethodGet && (q.Has("list-type") || q.Has("prefix") || q.Has("delimiter")) {
		return "?list " + prefixFolder(q.Get("prefix"))
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 2 {
		return "/"
	}
	for i := len(parts) - 2; i >= 1; i-- {
		if !isFanOut(parts[i]) {
			return parts[i]
		}
	}
	return "/"
}

// prefixFolder names the folder a listing's prefix is in, as folderOf
// names an object's ("repo/locks/" is locks, "repo/" is repo, "" is /).
func prefixFolder(prefix string) string {
	parts := strings.Split(strings.Trim(prefix, "/"), "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i] != "" && !isFanOut(parts[i]) {
			return parts[i]
		}
	}
	return "/"
}

func isFanOut(s string) bool {
	return len(s) == 2 && strings.Trim(s, "0123456789abcdef") == ""
}

// writeError answers with an S3 error document.
func writeError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource><RequestId>faultproxy</RequestId></Error>",
		code, message, xmlEscape(r.URL.Path))
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "0")
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, body)
	}
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\"", "&quot;", "'", "&apos;").Replace(s)
}

// hopByHop reports whether a header belongs to one connection and is not
// forwarded.
func hopByHop(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length":
		return true
	}
	return false
}

// countingReader adds the bytes read to n.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	k, err := c.r.Read(b)
	c.n.Add(int64(k))
	return k, err
}
