// Package notify tells people and monitoring systems about runs as they
// happen: each configured webhook gets a JSON document when a run starts
// and when it ends, and a job's healthcheck (a dead man's switch such as
// healthchecks.io) is pinged at /start, at its URL on success and at
// /fail on failure.
//
// A Notifier subscribes to the pass through a pass.Observer that only
// enqueues; deliveries run on goroutines of the notifier's own, one
// queue per destination (so that a slow server holds up only its own
// notifications, and each destination hears of a run's start before its
// end), retried with capped exponential backoff on network errors, 5xx
// and 429 answers, with a timeout per attempt.
//
// It must never hold up or fail a run, never block the pass (a full
// queue drops its oldest notification, counted and reported), and never
// show a URL's path, query or userinfo anywhere (healthcheck UUIDs and
// webhook tokens are secrets): failures name the scheme and host only.
// It imports nothing of nightjar's but schedule/pass.
package notify
