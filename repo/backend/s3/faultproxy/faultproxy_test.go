package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// upstream is an httptest server that answers every request with the
// request's Host, method and path, and a body of 1000 bytes; it counts
// the requests it sees.
type upstream struct {
	*httptest.Server
	seen  atomic.Int64
	hosts chan string
	got   chan []byte
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{hosts: make(chan string, 100), got: make(chan []byte, 100)}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.seen.Add(1)
		u.hosts <- r.Host
		b, _ := io.ReadAll(r.Body)
		u.got <- b
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(bytes.Repeat([]byte("x"), 1000))
	}))
	t.Cleanup(u.Close)
	return u
}

func startProxy(t *testing.T, target string, rules ...Rule) *Proxy {
	t.Helper()
	p, err := Start(target, 1, rules...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// client has no keep-alives, so that a dropped connection is one request.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func do(t *testing.T, method, url, body string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestPassesThroughWithHostAndCounts(t *testing.T) {
	up := newUpstream(t)
	p := startProxy(t, up.URL)
	resp, body, err := do(t, http.MethodPut, p.URL()+"/bucket/key?x=1", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(body) != 1000 || resp.Header.Get("X-Upstream") != "yes" {
		t.Fatalf("got %d, %d bytes, header %q", resp.StatusCode, len(body), resp.Header.Get("X-Upstream"))
	}
	if host := <-up.hosts; host != p.Addr() {
		t.Errorf("server saw Host %q, want the client's %q", host, p.Addr())
	}
	if got := <-up.got; string(got) != "hello" {
		t.Errorf("server got body %q, want hello", got)
	}
	if _, _, err := do(t, http.MethodGet, p.URL()+"/bucket/key", ""); err != nil {
		t.Fatal(err)
	}
	c := p.Counts()
	if c.Requests["PUT"] != 1 || c.Requests["GET"] != 1 || c.Total() != 2 || c.BytesIn != 5 || c.BytesOut != 2000 {
		t.Errorf("counts %+v, want 1 PUT, 1 GET, 5 bytes in, 2000 out", c)
	}
	if _, _, err := do(t, http.MethodGet, p.URL()+"/bucket/repo/data/ab/abcdef", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := do(t, http.MethodGet, p.URL()+"/bucket/?list-type=2&prefix=repo%2Flocks%2F", ""); err != nil {
		t.Fatal(err)
	}
	if c := p.Counts(); c.ByFolder["PUT /"] != 1 || c.ByFolder["GET /"] != 1 || c.ByFolder["GET data"] != 1 || c.ByFolder["GET ?list locks"] != 1 {
		t.Errorf("requests by folder %v, want PUT / (bucket/key), GET /, GET data and GET ?list locks once each", c.ByFolder)
	}
	p.ResetCounts()
	if c := p.Counts(); c.Total() != 0 || c.BytesIn != 0 || c.BytesOut != 0 {
		t.Errorf("counts after reset %+v, want zero", c)
	}
}

func TestErrorAnswersAreS3ErrorsAndNotForwarded(t *testing.T) {
	for _, tc := range []struct {
		fault  Fault
		status int
		code   string
	}{
		{SlowDown, 503, "<Code>SlowDown</Code>"},
		{InternalError, 500, "<Code>InternalError</Code>"},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			up := newUpstream(t)
			p := startProxy(t, up.URL, Rule{Method: http.MethodPut, PathContains: "/data/", Times: 2, Fault: tc.fault})
			for i := range 2 {
				resp, body, err := do(t, http.MethodPut, p.URL()+"/b/data/ab", "x")
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != tc.status || !bytes.Contains(body, []byte(tc.code)) {
					t.Fatalf("request %d: got %d %s, want %d with %s", i, resp.StatusCode, body, tc.status, tc.code)
				}
			}
			// Other paths and methods, and the third matching request,
			// pass.
			for _, r := range [][2]string{{"PUT", "/b/keys/k"}, {"GET", "/b/data/ab"}, {"PUT", "/b/data/ab"}} {
				resp, _, err := do(t, r[0], p.URL()+r[1], "x")
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("%s %s: %v %v, want 200", r[0], r[1], resp, err)
				}
			}
			if n := up.seen.Load(); n != 3 {
				t.Errorf("server saw %d requests, want 3 (faults are not forwarded)", n)
			}
			if c := p.Counts(); c.Faults[tc.fault.String()] != 2 || c.Total() != 5 {
				t.Errorf("counts %+v, want 2 faults of 5 requests", c)
			}
		})
	}
}

func TestNthRequest(t *testing.T) {
	up := newUpstream(t)
	p := startProxy(t, up.URL, Rule{Method: http.MethodGet, Nth: 2, Fault: SlowDown})
	var codes []int
	for range 3 {
		resp, _, err := do(t, http.MethodGet, p.URL()+"/b/x", "")
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, resp.StatusCode)
	}
	if codes[0] != 200 || codes[1] != 503 || codes[2] != 200 {
		t.Errorf("codes %v, want only the second 503", codes)
	}
}

func TestDropBeforeAndAfter(t *testing.T) {
	up := newUpstream(t)
	p := startProxy(t, up.URL, Rule{Method: http.MethodPut, Nth: 1, Fault: Drop}, Rule{Method: http.MethodPut, Nth: 2, Fault: DropAfter})
	if _, _, err := do(t, http.MethodPut, p.URL()+"/b/x", "a"); err == nil {
		t.Fatal("a dropped request got an answer")
	}
	if n := up.seen.Load(); n != 0 {
		t.Fatalf("Drop forwarded the request: server saw %d", n)
	}
	if _, _, err := do(t, http.MethodPut, p.URL()+"/b/x", "b"); err == nil {
		t.Fatal("a request dropped after forwarding got an answer")
	}
	if got := <-up.got; string(got) != "b" {
		t.Fatalf("DropAfter: server got %q, want b", got)
	}
}

func TestTruncateCutsTheBody(t *testing.T) {
	up := newUpstream(t)
	p := startProxy(t, up.URL, Rule{Method: http.MethodGet, Times: 1, Fault: Truncate})
	resp, body, err := do(t, http.MethodGet, p.URL()+"/b/x", "")
	if resp == nil {
		t.Fatalf("truncate sent no headers: %v", err)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading a truncated body: %v, want unexpected EOF", err)
	}
	if resp.ContentLength != 1000 || len(body) != 500 {
		t.Errorf("Content-Length %d, read %d bytes; want 1000 promised and 500 sent", resp.ContentLength, len(body))
	}
	if _, body, err := do(t, http.MethodGet, p.URL()+"/b/x", ""); err != nil || len(body) != 1000 {
		t.Errorf("after the one truncation: %d bytes, %v", len(body), err)
	}
}

func TestDelayHoldsUntilReleased(t *testing.T) {
	up := newUpstream(t)
	release := make(chan struct{})
	held := make(chan string, 1)
	p := startProxy(t, up.URL, Rule{
		Method: http.MethodPut, Fault: Delay, Release: release, Times: 1,
		OnFault: func(_, path string) { held <- path },
	})
	done := make(chan error, 1)
	go func() {
		_, body, err := do(t, http.MethodPut, p.URL()+"/b/locks/1", "lock")
		if err == nil && len(body) != 1000 {
			err = errors.New("short body")
		}
		done <- err
	}()
	if path := <-held; path != "/b/locks/1" {
		t.Fatalf("held %q", path)
	}
	// The server has the request, the client has no answer yet.
	if got := <-up.got; string(got) != "lock" {
		t.Fatalf("server got %q", got)
	}
	select {
	case err := <-done:
		t.Fatalf("the answer came before the release: %v", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestProbabilityIsSeeded(t *testing.T) {
	run := func() []int {
		up := newUpstream(t)
		p := startProxy(t, up.URL, Rule{Probability: 0.5, Fault: SlowDown})
		var codes []int
		for range 40 {
			resp, _, err := do(t, http.MethodGet, p.URL()+"/b/x", "")
			if err != nil {
				t.Fatal(err)
			}
			codes = append(codes, resp.StatusCode)
			if resp.StatusCode == http.StatusOK {
				<-up.hosts
				<-up.got
			}
		}
		return codes
	}
	a, b := run(), run()
	faults := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("the same seed gave different faults: %v and %v", a, b)
		}
		if a[i] == 503 {
			faults++
		}
	}
	if faults == 0 || faults == len(a) {
		t.Errorf("probability 0.5 gave %d faults of %d", faults, len(a))
	}
}

func TestStartRefusesAnotherScheme(t *testing.T) {
	if _, err := Start("https://example.com", 1); err == nil || !strings.Contains(err.Error(), "want http://host:port") {
		t.Errorf("https target: %v", err)
	}
}
