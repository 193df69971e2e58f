// Package faultproxy is an HTTP proxy on loopback that stands between a
// client and an S3 server and misbehaves by rule: it holds an answer back,
// drops the connection, answers 500 or 503 SlowDown with an S3 error body,
// or cuts a response body short. It also counts the requests and bytes
// that pass through it, which the benchmark reports.
//
// It is a test helper: only tests and bench import it. It passes the
// client's Host header through unchanged, because SigV4 signs that header:
// the client signs for the proxy's host:port and the server checks the
// signature against the Host it receives, so a forwarded request still
// verifies.
package faultproxy
