// Package limit caps the bandwidth of a backup: ParseRate reads the rate an
// operator writes in a job or on the command line, and a Limiter, shared by
// every reader of one backup, makes them together read no faster than it.
//
// It must never buffer data, start goroutines or read the clock other than
// through golang.org/x/time/rate, and a nil *Limiter must always mean
// unlimited, so that callers need no special case.
package limit
