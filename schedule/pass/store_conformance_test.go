package pass_test

import (
	"testing"

	"github.com/nightjar-backup/nightjar/schedule/pass"
	"github.com/nightjar-backup/nightjar/schedule/pass/storetest"
)

// The pass's in-memory fake keeps the rules the SQLite store keeps.
func TestFakeStoreConforms(t *testing.T) {
	storetest.RunStoreTests(t, func(t *testing.T) storetest.Store {
		return pass.NewFakeStore().(storetest.Store)
	})
}
