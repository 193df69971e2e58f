// Package memory is a repository Backend that keeps every object in memory,
// for fast unit tests of the code above the Backend interface. It keeps the
// same guarantees as repo/backend/local (the conformance suite in
// repo/backend/backendtest checks both) and also implements
// repo.ProcessLocker, with Abandon to simulate a lock holder that died, and
// repo.ObjectTimer (when each object was saved).
//
// It must never be used to hold real backups: nothing survives the process.
package memory
