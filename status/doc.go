// Package status turns what is known about nightjar's scheduler, jobs and
// repositories into warnings, worst first: the one place that decides what
// an operator is told is wrong (nightjar status, metrics, notifications).
//
// Evaluate is a pure function of a State that its caller reads: it must
// never do I/O, read a clock or touch a repository or database, and a
// warning's message must never carry a secret (no password, no password
// file's path or content, no credential of a URL).
package status
