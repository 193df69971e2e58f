// Package repotest makes repositories for the tests of the packages that
// use one (backup, restore, jobs): quick to open and with small chunks.
// It is for tests only; nothing in a nightjar binary imports it.
package repotest
