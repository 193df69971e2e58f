// Package backendtest holds what every repository Backend is tested with:
// Run, the conformance suite that checks each guarantee documented on
// repo.Backend (and on repo.ProcessLocker, when a backend implements it),
// and Faulty, a wrapper that injects failures and damage for tests of the
// code above a Backend.
//
// It is imported by tests only and must never be used by the program.
package backendtest
