// Package crashpoint stops a nightjar process before each change it makes
// to a repository, so that a test can kill it (SIGKILL) exactly there: the
// crash test of forget and prune (cmd/e2e/crash_test.go) decides by these
// events, never by time.
//
// It also holds a process at a named hold point (Hold), so that a test can
// have another process act first: job run --wait holds at job-run-queued,
// after queueing its run and before its own pass
// (cmd/schede2e TestJobRunWaitWaitsForARunAnotherProcessAdmitted).
//
// It exists only for tests. Its hook is compiled only under the build tag
// crashtest (go build -tags crashtest); in every other build Wrap returns
// the backend unchanged, Hold returns at once, and the environment
// variables NIGHTJAR_CRASHPOINT and NIGHTJAR_HOLDPOINT do nothing. It must never be part of a release build, never change
// what a call does (only hold it back), and never be imported by anything
// but package cmd.
//
// The protocol, under the tag: when NIGHTJAR_CRASHPOINT names a Unix
// socket, the first mutating call (Save, Remove, a pack stream's Commit, a
// held lock's save and release) connects to it; before each such call the
// process writes the line "step N OP OBJECT" (N counting from 1, OP one of
// save, remove, commit, lock, unlock) and waits for one byte back, then
// makes the call. Mutating calls are made one at a time, so that at step N
// every earlier call is complete and no other is under way.
//
// The hold protocol, under the tag: when NIGHTJAR_HOLDPOINT is
// "NAME:SOCKET" and a call Hold(ctx, NAME) is reached, the process connects
// to the Unix socket SOCKET, writes the line "hold NAME" and waits until
// the test writes one byte or closes the connection; then Hold returns and
// the process goes on. Other hold points return at once. Hold fails (and
// the command with it) when the socket cannot be reached or ctx ends.
package crashpoint
