package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// request is what a test server received.
type request struct {
	Method, Path, Query, ContentType, UserAgent string
	Body                                        []byte
}

// server is a real HTTP server on loopback that records each request and
// answers with status(n) for the nth (from 1). While hold is open it
// keeps each request waiting (after recording it) until hold is closed or
// the client gives up.
type server struct {
	*httptest.Server
	got    chan request
	count  atomic.Int64
	status func(n int64) int
	hold   chan struct{}
}

func newServer(t *testing.T, status func(n int64) int, hold chan struct{}) *server {
	t.Helper()
	s := &server{got: make(chan request, 100), status: status, hold: hold}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.count.Add(1)
		body, _ := io.ReadAll(r.Body)
		s.got <- request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, ContentType: r.Header.Get("Content-Type"), UserAgent: r.UserAgent(), Body: body}
		if s.hold != nil {
			select {
			case <-s.hold:
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(s.status(n))
	}))
	t.Cleanup(s.Close)
	return s
}

func always(code int) func(int64) int { return func(int64) int { return code } }

// next returns the next request the server received; the test fails if
// the notifier ends (done) first.
func (s *server) next(t *testing.T, done <-chan struct{}) request {
	t.Helper()
	select {
	case r := <-s.got:
		return r
	case <-done:
		select {
		case r := <-s.got:
			return r
		default:
			t.Fatal("the server received no further request")
		}
	}
	return request{}
}

// noMore fails the test if the server received a request it was not
// expected to.
func (s *server) noMore(t *testing.T) {
	t.Helper()
	select {
	case r := <-s.got:
		t.Errorf("unexpected request %s %s: %s", r.Method, r.Path, r.Body)
	default:
	}
}

// fakeSleep records the backoffs asked for and returns at once.
type fakeSleep struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (f *fakeSleep) sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waits = append(f.waits, d)
	return ctx.Err()
}

func (f *fakeSleep) got() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.waits)
}

var testStart = time.Date(2026, 3, 29, 2, 0, 5, 0, time.UTC)

func testJobs(t *testing.T) map[string]pass.JobDef {
	t.Helper()
	s, err := schedule.Parse("daily 02:00", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]pass.JobDef{"db": {Name: "db", Schedule: s, Repository: "nas"}}
}

func startedRun() pass.Run {
	return pass.Run{ID: 12, Job: "db", Kind: pass.KindBackup, Trigger: pass.TriggerSchedule, Attempt: 1, Status: pass.StatusRunning,
		ScheduledAt: testStart.Add(-5 * time.Second), StartedAt: testStart}
}

func endedRun(status, class, code, message string) pass.Run {
	r := startedRun()
	r.Status, r.ErrorClass, r.ErrorCode, r.Message = status, class, code, message
	r.EndedAt = testStart.Add(90 * time.Second)
	r.Figures = pass.Figures{BytesRead: 4096, BytesAdded: 1024, Files: 3, FilesSkipped: 1,
		Skipped: []pass.Skipped{{Object: "/data/locked", Reason: "permission denied"}}, Counters: map[string]int64{"sources": 1}}
	r.Snapshots = []pass.SnapshotRef{{RepositoryID: "r1", SnapshotID: "run-12-data", Source: "/data"}}
	return r
}

// newTestNotifier returns a notifier with a fake sleeper, closed (with a
// bounded wait) when the test ends.
func newTestNotifier(t *testing.T, opts Options) (*Notifier, *fakeSleep) {
	t.Helper()
	f := &fakeSleep{}
	opts.Host, opts.Version, opts.Sleep = "db1", "1.2.3", f.sleep
	n := New(opts)
	t.Cleanup(func() { closeNow(n) })
	return n, f
}

// closeNow closes n without waiting for deliveries still held.
func closeNow(n *Notifier) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n.Close(ctx)
}

// closeAll closes n, waiting for every delivery: the test servers of
// these tests answer, or are held by the test.
func closeAll(n *Notifier) { n.Close(context.Background()) }

func decode(t *testing.T, r request) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatalf("the body is not JSON: %v\n%s", err, r.Body)
	}
	return doc
}

// A webhook gets a JSON document when a backup run starts and when it
// succeeds, in that order, with the run's fields, the schedule in words,
// the host and the version; the observer returns at once.
func TestWebhookStartAndSuccess(t *testing.T) {
	srv := newServer(t, always(http.StatusNoContent), nil)
	n, sleeps := newTestNotifier(t, Options{})
	obs := n.Observer(testJobs(t), Routes{"db": {Webhooks: []string{srv.URL + "/hooks/TOKEN?key=SECRET"}}})
	obs.Started(startedRun())
	obs.Finished(endedRun(pass.StatusSucceeded, "", "", ""))
	closeAll(n)

	done := make(chan struct{})
	close(done)
	start, end := srv.next(t, done), srv.next(t, done)
	srv.noMore(t)
	for _, r := range []request{start, end} {
		if r.Method != http.MethodPost || r.Path != "/hooks/TOKEN" || r.Query != "key=SECRET" {
			t.Errorf("request %s %s?%s, want POST to the configured URL", r.Method, r.Path, r.Query)
		}
		if r.ContentType != "application/json" || r.UserAgent != "nightjar/1.2.3" {
			t.Errorf("Content-Type %q, User-Agent %q; want application/json, nightjar/1.2.3", r.ContentType, r.UserAgent)
		}
	}
	s := decode(t, start)
	if s["event"] != "started" || s["status"] != "running" || s["ended_at"] != nil || s["run_id"] != 12.0 {
		t.Errorf("start document %s", start.Body)
	}
	e := decode(t, end)
	want := map[string]any{
		"event": "succeeded", "status": "succeeded", "run_id": 12.0, "job": "db", "kind": "backup", "trigger": "schedule",
		"attempt": 1.0, "error_class": "", "error_code": "", "bytes_read": 4096.0, "bytes_added": 1024.0, "files": 3.0,
		"files_skipped": 1.0, "repository": "nas", "host": "db1", "nightjar_version": "1.2.3", "schedule": testJobs(t)["db"].Schedule.Description(),
		"started_at": "2026-03-29T02:00:05Z", "ended_at": "2026-03-29T02:01:35Z", "duration_seconds": 90.0,
		"summary": "nightjar on db1: backup run 12 of job db (attempt 1) succeeded",
	}
	for k, v := range want {
		if e[k] != v {
			t.Errorf("%s = %#v, want %#v", k, e[k], v)
		}
	}
	snaps, _ := e["snapshots"].([]any)
	if len(snaps) != 1 || snaps[0].(map[string]any)["snapshot_id"] != "run-12-data" {
		t.Errorf("snapshots = %#v, want run-12-data", e["snapshots"])
	}
	if c, _ := e["counters"].(map[string]any); c["sources"] != 1.0 {
		t.Errorf("counters = %#v", e["counters"])
	}
	if f := n.Failures(); len(f) != 0 || len(sleeps.got()) != 0 {
		t.Errorf("failures %v, backoffs %v; want none", f, sleeps.got())
	}
}

// Each event becomes the document's event; failures carry their class,
// code and message.
func TestWebhookEvents(t *testing.T) {
	cases := []struct {
		name     string
		tell     func(pass.Observer)
		event    string
		status   string
		code     string
		summary  string
		lostText string
	}{
		{name: "failed", tell: func(o pass.Observer) {
			o.Finished(endedRun(pass.StatusFailed, pass.ClassSource, "ALL_SOURCES_FAILED", "every source failed: /data: no such file"))
		}, event: "failed", status: "failed", code: "ALL_SOURCES_FAILED",
			summary: "nightjar on db1: backup run 12 of job db (attempt 1) failed [source/ALL_SOURCES_FAILED]: every source failed: /data: no such file"},
		{name: "partial", tell: func(o pass.Observer) {
			o.Finished(endedRun(pass.StatusPartialFailure, "", pass.CodeObjectsSkipped, "1 object skipped"))
		}, event: "partial_failure", status: "partial_failure", code: "OBJECTS_SKIPPED"},
		{name: "interrupted", tell: func(o pass.Observer) {
			o.Finished(endedRun(pass.StatusInterrupted, "", pass.CodeInterrupted, "shutdown"))
		}, event: "interrupted", status: "interrupted", code: "INTERRUPTED"},
		{name: "lost", tell: func(o pass.Observer) {
			o.Lost(pass.LostRun{Run: startedRun(), Reason: pass.LostNotRecorded})
		}, event: "lost", status: "running", lostText: pass.LostNotRecorded},
		{name: "reclaimed", tell: func(o pass.Observer) {
			o.Reclaimed(endedRun(pass.StatusFailed, pass.ClassTransient, pass.CodeOrphaned, "runner stopped answering"))
		}, event: "failed", status: "failed", code: "ORPHANED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, always(http.StatusOK), nil)
			n, _ := newTestNotifier(t, Options{})
			tc.tell(n.Observer(testJobs(t), Routes{"db": {Webhooks: []string{srv.URL}}}))
			closeAll(n)
			done := make(chan struct{})
			close(done)
			d := decode(t, srv.next(t, done))
			srv.noMore(t)
			if d["event"] != tc.event || d["status"] != tc.status || d["error_code"] != tc.code {
				t.Errorf("event %v status %v code %v; want %s, %s, %q", d["event"], d["status"], d["error_code"], tc.event, tc.status, tc.code)
			}
			if tc.summary != "" && d["summary"] != tc.summary {
				t.Errorf("summary %q, want %q", d["summary"], tc.summary)
			}
			if tc.lostText != "" && d["lost_reason"] != tc.lostText {
				t.Errorf("lost_reason %q, want %q", d["lost_reason"], tc.lostText)
			}
		})
	}
}

// A server that answers 500 twice and then 200 gets the document three
// times and the delivery succeeds, after backoffs of 1s and 2s.
func TestRetriedAfter500(t *testing.T) {
	srv := newServer(t, func(n int64) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}, nil)
	n, sleeps := newTestNotifier(t, Options{})
	n.Observer(testJobs(t), Routes{"db": {Webhooks: []string{srv.URL}}}).Finished(endedRun(pass.StatusSucceeded, "", "", ""))
	closeAll(n)
	if got := srv.count.Load(); got != 3 {
		t.Errorf("the server got %d requests, want 3", got)
	}
	if f := n.Failures(); len(f) != 0 {
		t.Errorf("failures %v, want none: the third attempt was delivered", f)
	}
	if got, want := sleeps.got(), []time.Duration{time.Second, 2 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("backoffs %v, want %v", got, want)
	}
}

// What the answers decide: 5xx and 429 are retried up to the attempts,
// other 4xx and redirects are not.
func TestAnswersRetried(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		requests int64
		reason   string
	}{
		{name: "503 is retried", status: http.StatusServiceUnavailable, requests: 3, reason: "answered 503 Service Unavailable"},
		{name: "429 is retried", status: http.StatusTooManyRequests, requests: 3, reason: "answered 429 Too Many Requests"},
		{name: "404 is not", status: http.StatusNotFound, requests: 1, reason: "answered 404 Not Found"},
		{name: "401 is not", status: http.StatusUnauthorized, requests: 1, reason: "answered 401 Unauthorized"},
		{name: "a redirect is not followed", status: http.StatusFound, requests: 1, reason: "redirects are not followed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, always(tc.status), nil)
			n, _ := newTestNotifier(t, Options{})
			n.Observer(testJobs(t), Routes{"db": {Webhooks: []string{srv.URL + "/x"}, Attempts: 3}}).Finished(endedRun(pass.StatusSucceeded, "", "", ""))
			closeAll(n)
			if got := srv.count.Load(); got != tc.requests {
				t.Errorf("the server got %d requests, want %d", got, tc.requests)
			}
			f := n.Failures()
			if len(f) != 1 || f[0].Attempts != int(tc.requests) || !strings.Contains(f[0].Reason, tc.reason) {
				t.Fatalf("failures %+v, want one after %d attempts: %s", f, tc.requests, tc.reason)
			}
		})
	}
}

// reportingTransport tells sent of each request before it sends it (to a
// real server) with a transport of its own: a test counts the attempts by
// these events, whether or not a request reached the server before its
// attempt timed out.
type reportingTransport struct {
	sent chan<- string
	next *http.Transport
}

func (rt reportingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.sent <- r.URL.Path
	return rt.next.RoundTrip(r)
}

func reportingClient(t *testing.T, sent chan<- string) *http.Client {
	t.Helper()
	next := &http.Transport{}
	t.Cleanup(next.CloseIdleConnections)
	return &http.Client{Transport: reportingTransport{sent: sent, next: next}}
}

// held is the attempt timeout of routes whose server the test holds: far
// longer than any test, so that no attempt ends by time while the test
// decides when the server answers.
const held = time.Hour

// A server that holds the request past the timeout: the observer returns
// at once, each attempt times out, and the delivery is retried and then
// reported, without the server's URL path. The server never answers while
// it holds, so every attempt ends by its timeout however slowly the
// machine runs; the attempts are counted as the client sends them, not as
// the server happens to receive them.
func TestSlowServerTimesOut(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	srv := newServer(t, always(http.StatusOK), hold)
	sent := make(chan string, 10)
	n, _ := newTestNotifier(t, Options{Client: reportingClient(t, sent)})
	obs := n.Observer(testJobs(t), Routes{"db": {Webhooks: []string{srv.URL + "/TOKEN"}, Timeout: 50 * time.Millisecond, Attempts: 2}})
	obs.Finished(endedRun(pass.StatusSucceeded, "", "", "")) // returns while the server holds the request
	<-sent                                                   // the first attempt is under way
	closeAll(n)
	if got := 1 + len(sent); got != 2 {
		t.Errorf("the notifier sent %d requests, want 2 (the attempts)", got)
	}
	if got := srv.count.Load(); got > 2 {
		t.Errorf("the server got %d requests, want at most the 2 attempts", got)
	}
	f := n.Failures()
	if len(f) != 1 || f[0].Attempts != 2 || f[0].Reason != "no answer within 50ms" {
		t.Fatalf("failures %+v, want one: no answer within 50ms after 2 attempts", f)
	}
	if line := f[0].String(); strings.Contains(line, "TOKEN") || !strings.Contains(line, srv.URL) {
		t.Errorf("failure %q must name %s and not the path", line, srv.URL)
	}
}

// A server that is down (a closed port): every attempt fails, and the
// failure names the scheme and host only.
func TestDownServer(t *testing.T) {
	srv := newServer(t, always(http.StatusOK), nil)
	srv.Close()
	n, sleeps := newTestNotifier(t, Options{})
	secret := strings.Replace(srv.URL, "http://", "http://user:PASSWORD@", 1) + "/hook/TOKEN?sig=SECRET"
	n.Observer(testJobs(t), Routes{"db": {Webhooks: []string{secret}}}).Finished(endedRun(pass.StatusFailed, pass.ClassSource, "X", "m"))
	closeAll(n)
	f := n.Failures()
	if len(f) != 1 || f[0].Attempts != DefaultAttempts || !strings.Contains(f[0].Reason, "connection refused") {
		t.Fatalf("failures %+v, want one after %d attempts: connection refused", f, DefaultAttempts)
	}
	line := f[0].String()
	for _, secretPart := range []string{"user", "PASSWORD", "TOKEN", "SECRET", "/hook"} {
		if strings.Contains(line, secretPart) {
			t.Errorf("failure %q shows %q", line, secretPart)
		}
	}
	if !strings.Contains(line, "notification to webhook "+srv.URL+"/… (event failed of run 12, job db) not delivered, after 3 attempts: ") {
		t.Errorf("failure %q does not say what went where", line)
	}
	if got := len(sleeps.got()); got != DefaultAttempts-1 {
		t.Errorf("%d backoffs, want %d", got, DefaultAttempts-1)
	}
}

// A healthcheck is pinged at /start, at its URL on success, and at /fail
// on failure and partial failure, keeping its query; cancelled,
// interrupted and lost runs and runs of other kinds do not ping it.
func TestHealthcheckPings(t *testing.T) {
	cases := []struct {
		name  string
		tell  func(pass.Observer)
		paths []string
	}{
		{name: "success", tell: func(o pass.Observer) {
			o.Started(startedRun())
			o.Finished(endedRun(pass.StatusSucceeded, "", "", ""))
		}, paths: []string{"/ping/UUID/start", "/ping/UUID"}},
		{name: "failure", tell: func(o pass.Observer) {
			o.Started(startedRun())
			o.Finished(endedRun(pass.StatusFailed, pass.ClassSource, "ALL_SOURCES_FAILED", "no such file"))
		}, paths: []string{"/ping/UUID/start", "/ping/UUID/fail"}},
		{name: "partial failure", tell: func(o pass.Observer) {
			o.Finished(endedRun(pass.StatusPartialFailure, "", pass.CodeObjectsSkipped, "1 skipped"))
		}, paths: []string{"/ping/UUID/fail"}},
		{name: "orphaned", tell: func(o pass.Observer) {
			o.Reclaimed(endedRun(pass.StatusFailed, pass.ClassTransient, pass.CodeOrphaned, "gone"))
		}, paths: []string{"/ping/UUID/fail"}},
		{name: "cancelled, interrupted, lost", tell: func(o pass.Observer) {
			o.Finished(endedRun(pass.StatusCancelled, "", pass.CodeCancelled, ""))
			o.Finished(endedRun(pass.StatusInterrupted, "", pass.CodeInterrupted, ""))
			o.Lost(pass.LostRun{Run: startedRun(), Reason: pass.LostAbandoned})
		}},
		{name: "a verify run", tell: func(o pass.Observer) {
			r := endedRun(pass.StatusFailed, pass.ClassIntegrity, pass.CodeVerifyFailed, "")
			r.Kind = pass.KindVerify
			o.Finished(r)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, always(http.StatusOK), nil)
			n, _ := newTestNotifier(t, Options{})
			tc.tell(n.Observer(testJobs(t), Routes{"db": {Healthcheck: srv.URL + "/ping/UUID?create=1"}}))
			closeAll(n)
			var paths []string
			for srv.count.Load() > int64(len(paths)) {
				r := <-srv.got
				paths = append(paths, r.Path)
				if r.Query != "create=1" || !strings.HasPrefix(r.ContentType, "text/plain") {
					t.Errorf("ping %s?%s (%s): want the configured query, a text body", r.Path, r.Query, r.ContentType)
				}
				if !strings.Contains(string(r.Body), "backup run 12 of job db") {
					t.Errorf("ping body %q does not summarise the run", r.Body)
				}
			}
			if !slices.Equal(paths, tc.paths) {
				t.Errorf("pings %q, want %q", paths, tc.paths)
			}
		})
	}
}

// Webhooks hear of backup runs only, unless the route names more kinds.
func TestKinds(t *testing.T) {
	verify := endedRun(pass.StatusSucceeded, "", "", "")
	verify.Kind = pass.KindVerify
	cases := []struct {
		name  string
		kinds []string
		run   pass.Run
		sent  bool
	}{
		{name: "backup by default", run: endedRun(pass.StatusSucceeded, "", "", ""), sent: true},
		{name: "no verify by default", run: verify, sent: false},
		{name: "verify when named", kinds: []string{pass.KindBackup, pass.KindVerify}, run: verify, sent: true},
		{name: "no backup when not named", kinds: []string{pass.KindVerify}, run: endedRun(pass.StatusSucceeded, "", "", ""), sent: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, always(http.StatusOK), nil)
			n, _ := newTestNotifier(t, Options{})
			n.Observer(testJobs(t), Routes{"db": {Webhooks: []string{srv.URL}, Kinds: tc.kinds}}).Finished(tc.run)
			closeAll(n)
			if sent := srv.count.Load() == 1; sent != tc.sent {
				t.Errorf("sent %v, want %v", sent, tc.sent)
			}
		})
	}
}

// A job without a route, or with an empty one, sends nothing.
func TestNoRoute(t *testing.T) {
	srv := newServer(t, always(http.StatusOK), nil)
	n, _ := newTestNotifier(t, Options{})
	obs := n.Observer(testJobs(t), Routes{"other": {Webhooks: []string{srv.URL}}, "db": {}})
	obs.Started(startedRun())
	obs.Finished(endedRun(pass.StatusFailed, "", "", ""))
	closeAll(n)
	if got := srv.count.Load(); got != 0 {
		t.Errorf("the server got %d requests, want none", got)
	}
}

// A full queue drops its oldest waiting notification, counts it and
// reports it; the pass is never blocked, and the rest go out in order.
func TestFullQueueDropsOldest(t *testing.T) {
	hold := make(chan struct{})
	srv := newServer(t, always(http.StatusOK), hold)
	n, _ := newTestNotifier(t, Options{QueueSize: 2})
	obs := n.Observer(testJobs(t), Routes{"db": {Webhooks: []string{srv.URL}, Timeout: held}})
	run := func(id int64) pass.Run {
		r := endedRun(pass.StatusSucceeded, "", "", "")
		r.ID = id
		return r
	}
	obs.Finished(run(1))
	srv.next(t, nil) // run 1's document is being delivered, held by the server
	for id := int64(2); id <= 4; id++ {
		obs.Finished(run(id)) // 2 and 3 wait; 4 drops 2
	}
	// Dropping happens as run 4 is enqueued, while run 1 is still held.
	f := n.Failures()
	if len(f) != 1 || f[0].Run != 2 || f[0].Attempts != 0 || !strings.Contains(f[0].Reason, "dropped") {
		t.Errorf("failures %+v, want run 2's document dropped", f)
	}
	close(hold)
	closeAll(n)
	var ids []float64
	for srv.count.Load() > int64(len(ids)+1) {
		ids = append(ids, decode(t, <-srv.got)["run_id"].(float64))
	}
	if !slices.Equal(ids, []float64{3, 4}) {
		t.Errorf("delivered after run 1: %v, want runs 3 and 4", ids)
	}
	if f := n.Failures(); len(f) != 0 {
		t.Errorf("failures %+v after the server answered, want none: only run 2 was dropped", f)
	}
}

// Close waits for pending deliveries until its context ends; then the
// attempt under way is stopped and everything not delivered is reported.
func TestCloseStopsWaiting(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	srv := newServer(t, always(http.StatusOK), hold)
	n, _ := newTestNotifier(t, Options{})
	obs := n.Observer(testJobs(t), Routes{"db": {Webhooks: []string{srv.URL}, Timeout: held}})
	obs.Started(startedRun())
	obs.Finished(endedRun(pass.StatusSucceeded, "", "", ""))
	srv.next(t, nil) // the start document is held
	closeNow(n)
	f := n.Failures()
	if len(f) != 2 || f[0].Event != "started" || f[1].Event != "succeeded" {
		t.Fatalf("failures %+v, want the start and the success documents", f)
	}
	for _, x := range f {
		if !strings.Contains(x.Reason, "stopped waiting") {
			t.Errorf("failure reason %q, want that nightjar stopped waiting", x.Reason)
		}
	}
	obs.Finished(endedRun(pass.StatusFailed, "", "", "")) // after Close: reported, never sent
	if f := n.Failures(); len(f) != 1 || f[0].Attempts != 0 {
		t.Errorf("a notification after Close: failures %+v, want one never sent", f)
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
}

func TestCloseWait(t *testing.T) {
	cases := []struct {
		name   string
		routes Routes
		want   time.Duration
	}{
		{name: "nothing to send", routes: Routes{"a": {}}, want: 0},
		{name: "defaults: 3 attempts of 10s, backoffs 1s and 2s", routes: Routes{"a": {Webhooks: []string{"https://h"}}}, want: 33 * time.Second},
		{name: "the longest route", routes: Routes{"a": {Webhooks: []string{"https://h"}, Attempts: 1, Timeout: 5 * time.Second},
			"b": {Healthcheck: "https://h", Attempts: 2, Timeout: 20 * time.Second}}, want: 41 * time.Second},
		{name: "capped", routes: Routes{"a": {Webhooks: []string{"https://h"}, Attempts: 10, Timeout: time.Minute}}, want: MaxCloseWait},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.routes.CloseWait(); got != tc.want {
				t.Errorf("CloseWait = %s, want %s", got, tc.want)
			}
		})
	}
}
