// Package storetest is the conformance suite of pass.Store: the rules every
// store keeps, run against the SQLite store (package db) and the pass's
// in-memory fake alike, so that a pass decides the same with either.
//
// It must never import a store: stores hand themselves to RunStoreTests.
// It decides by the times it passes to the store, never by the real clock.
package storetest
