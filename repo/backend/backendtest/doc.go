// Package backendtest holds what every repository Backend is tested with:
// Run, the conformance suite that checks each guarantee documented on
// repo.Backend and on its capabilities (found with repo.Capability, so also
// through wrappers), and wrappers for tests of the code above a Backend:
// Faulty injects failures and damage, Streaming adds pack streaming to any
// backend, HeldPacks holds pack writes until released. Each unwraps.
//
// It is imported by tests only and must never be used by the program.
package backendtest
