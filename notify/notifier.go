package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/nightjar-backup/nightjar/redact"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// DefaultQueueSize is how many notifications wait for one destination
// before the oldest is dropped.
const DefaultQueueSize = 100

// Options configure a Notifier. Only Host and Version matter in use; the
// rest are for tests.
type Options struct {
	Host    string // this machine, in every document
	Version string // nightjar's version, in every document and the User-Agent
	// Client sends the requests; nil: a client of its own that does not
	// follow redirects. Each attempt's timeout comes from its Route.
	Client *http.Client
	// Sleep waits between attempts, returning early with ctx's error;
	// nil: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Backoff is the wait before retry number retry; nil: Backoff.
	Backoff   func(retry int) time.Duration
	QueueSize int // per destination; 0: DefaultQueueSize
}

// Notifier delivers notifications of runs (Observer) on goroutines of its
// own, one queue per destination, until Close. Its methods are safe for
// concurrent use.
type Notifier struct {
	opts   Options
	ctx    context.Context // cancelled when Close stops waiting
	cancel context.CancelFunc

	mu       sync.Mutex
	queues   map[string]*queue // by destination: a webhook's URL, a healthcheck's base URL
	failures []Failure         // not yet taken by Failures
	closed   bool
	workers  sync.WaitGroup
}

// queue holds the notifications for one destination, in order; one
// goroutine at a time drains it.
type queue struct {
	pending  []delivery
	draining bool
}

// delivery is one notification to send.
type delivery struct {
	target      string // "webhook" or "healthcheck"
	url         string // the full URL: never shown
	contentType string
	body        []byte
	timeout     time.Duration
	attempts    int
	event       string
	run         int64
	job         string
}

// Failure is a notification that was not delivered.
type Failure struct {
	Target   string // "webhook" or "healthcheck"
	Address  string // scheme and host only (redact.URL)
	Event    string
	Run      int64
	Job      string
	Attempts int    // attempts made; 0: never sent (dropped, or nightjar stopped waiting)
	Reason   string // why the last attempt failed, or why none was made
}

// String says what was not delivered, in one line without secrets:
// "notification to webhook https://hooks.example.com (event failed of
// run 12, job db) not delivered after 3 attempts: answered 503 ...".
func (f Failure) String() string {
	how := fmt.Sprintf("after %d attempts", f.Attempts)
	switch f.Attempts {
	case 0:
		how = "never sent"
	case 1:
		how = "after 1 attempt"
	}
	return fmt.Sprintf("notification to %s %s (event %s of run %d, job %s) not delivered, %s: %s",
		f.Target, f.Address, f.Event, f.Run, f.Job, how, f.Reason)
}

// New returns a Notifier that sends nothing until its Observer is told of runs.
func New(opts Options) *Notifier {
	if opts.Client == nil {
		opts.Client = &http.Client{
			// A redirected POST would lose its body: the configured URL
			// must be the final one.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	if opts.Backoff == nil {
		opts.Backoff = Backoff
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Notifier{opts: opts, ctx: ctx, cancel: cancel, queues: map[string]*queue{}}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Observer returns the observer that tells routes of the runs of jobs
// (the pass's Jobs, for each job's schedule and repository): Started, Finished, Lost,
// and Reclaimed (a run found orphaned, ended as failed). It only builds
// the documents and enqueues them.
func (n *Notifier) Observer(jobs map[string]pass.JobDef, routes Routes) pass.Observer {
	tell := func(event string, run pass.Run, lostReason string) {
		route, ok := routes[run.Job]
		if !ok || route.Empty() {
			return
		}
		doc := newDocument(event, run, jobs[run.Job], lostReason, n.opts.Host, n.opts.Version)
		n.send(route, doc)
	}
	return pass.Observer{
		Started:   func(r pass.Run) { tell(EventStarted, r, "") },
		Finished:  func(r pass.Run) { tell(r.Status, r, "") },
		Lost:      func(l pass.LostRun) { tell(EventLost, l.Run, l.Reason) },
		Reclaimed: func(r pass.Run) { tell(r.Status, r, "") },
	}
}

// send enqueues doc for the route's destinations.
func (n *Notifier) send(route Route, doc Document) {
	base := delivery{timeout: route.timeout(), attempts: route.attempts(), event: doc.Event, run: doc.RunID, job: doc.Job}
	if route.hears(doc.Kind) && len(route.Webhooks) > 0 {
		body, err := json.Marshal(doc)
		if err != nil {
			panic(fmt.Sprintf("notify: encode document: %v", err)) // a Document always encodes
		}
		for _, u := range route.Webhooks {
			d := base
			d.target, d.url, d.contentType, d.body = "webhook", u, "application/json", body
			n.enqueue(u, d)
		}
	}
	if route.Healthcheck != "" && doc.Kind == pass.KindBackup {
		if suffix, ok := healthcheckSuffix(doc.Event); ok {
			d := base
			d.target, d.url, d.contentType, d.body = "healthcheck", ping(route.Healthcheck, suffix), "text/plain; charset=utf-8", []byte(doc.healthcheckBody())
			n.enqueue(route.Healthcheck, d)
		}
	}
}

// enqueue adds d to its destination's queue, dropping the oldest waiting
// notification when the queue is full, and starts the queue's goroutine.
func (n *Notifier) enqueue(dest string, d delivery) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		n.failLocked(d, 0, "nightjar was no longer sending notifications")
		return
	}
	q := n.queues[dest]
	if q == nil {
		q = &queue{}
		n.queues[dest] = q
	}
	if len(q.pending) >= n.opts.QueueSize {
		n.failLocked(q.pending[0], 0, fmt.Sprintf("dropped: %d newer notifications for it were waiting", n.opts.QueueSize))
		q.pending = q.pending[1:]
	}
	q.pending = append(q.pending, d)
	if !q.draining {
		q.draining = true
		n.workers.Add(1)
		go n.drain(q)
	}
}

// drain delivers a queue's notifications one after the other until it is empty.
func (n *Notifier) drain(q *queue) {
	defer n.workers.Done()
	for {
		n.mu.Lock()
		if len(q.pending) == 0 {
			q.draining = false
			n.mu.Unlock()
			return
		}
		d := q.pending[0]
		q.pending = q.pending[1:]
		n.mu.Unlock()
		if attempts, err := n.deliver(d); err != nil {
			n.mu.Lock()
			n.failLocked(d, attempts, err.Error())
			n.mu.Unlock()
		}
	}
}

func (n *Notifier) failLocked(d delivery, attempts int, reason string) {
	n.failures = append(n.failures, Failure{Target: d.target, Address: redact.URL(d.url), Event: d.event, Run: d.run, Job: d.job, Attempts: attempts, Reason: redact.Text(reason)})
}

// errStopped is the reason of a notification Close stopped waiting for.
var errStopped = errors.New("nightjar stopped waiting for notifications before it exits")

// deliver sends d, retrying what may pass on a later attempt; it returns
// the attempts made and, when none succeeded, the last one's error.
func (n *Notifier) deliver(d delivery) (int, error) {
	for attempt := 1; ; attempt++ {
		if n.ctx.Err() != nil {
			return attempt - 1, errStopped
		}
		retry, err := n.attempt(d)
		if err == nil {
			return attempt, nil
		}
		if !retry || attempt >= d.attempts {
			return attempt, err
		}
		if n.opts.Sleep(n.ctx, n.opts.Backoff(attempt)) != nil {
			return attempt, fmt.Errorf("%w (last attempt: %v)", errStopped, err)
		}
	}
}

// maxAnswer is how much of an answer's body is read (and thrown away),
// so that the connection can be reused.
const maxAnswer = 64 << 10

// attempt sends d once. It reports whether a failure may pass on a later
// attempt: a network error, a timeout, a 5xx or a 429 answer.
func (n *Notifier) attempt(d delivery) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(n.ctx, d.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(d.body))
	if err != nil {
		return false, errors.New("the URL does not make a request") // its error would show the URL
	}
	req.Header.Set("Content-Type", d.contentType)
	req.Header.Set("User-Agent", "nightjar/"+n.opts.Version)
	resp, err := n.opts.Client.Do(req)
	if err != nil {
		switch {
		case n.ctx.Err() != nil:
			return false, errStopped
		case ctx.Err() != nil:
			return true, fmt.Errorf("no answer within %s", d.timeout)
		}
		return true, withoutURL(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	_ = resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return false, nil
	case code >= 500, code == http.StatusTooManyRequests:
		return true, fmt.Errorf("answered %s", resp.Status)
	case code >= 300 && code < 400:
		return false, fmt.Errorf("answered %s: redirects are not followed, configure the URL it redirects to", resp.Status)
	default:
		return false, fmt.Errorf("answered %s", resp.Status)
	}
}

// withoutURL returns the error of a request without the URL that
// *url.Error puts in front of it.
func withoutURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

// Failures returns the notifications that were not delivered since the
// last call, oldest first.
func (n *Notifier) Failures() []Failure {
	n.mu.Lock()
	defer n.mu.Unlock()
	f := n.failures
	n.failures = nil
	return f
}

// Close stops taking notifications and waits for those pending to be
// delivered, or until ctx ends: then it stops the attempts under way and
// records the rest as failures (Failures). Later notifications are
// recorded as failures too.
func (n *Notifier) Close(ctx context.Context) {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	done := make(chan struct{})
	go func() {
		n.workers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		n.cancel()
		<-done
	}
	n.cancel()
}
