// Package crashpoint stops a nightjar process before each change it makes
// to a repository, so that a test can kill it (SIGKILL) exactly there: the
// crash test of forget and prune (cmd/e2e/crash_test.go) decides by these
// events, never by time.
//
// It exists only for tests. Its hook is compiled only under the build tag
// crashtest (go build -tags crashtest); in every other build Wrap returns
// the backend unchanged and the environment variable NIGHTJAR_CRASHPOINT
// does nothing. It must never be part of a release build, never change
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
package crashpoint
