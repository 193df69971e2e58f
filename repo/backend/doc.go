// Package backend opens a repository's storage from a location, the string
// a user gives with -r or in the config: a path or local:PATH for a local
// folder (package local), and the schemes that object stores add (s3:...,
// issue 15). It is the one place that knows every Backend implementation;
// the Backend interface, its capabilities and Capability stay in package
// repo, which the implementations import.
//
// It must never hold repository logic (format, keys, locks): it only turns
// a location into a Backend.
package backend
