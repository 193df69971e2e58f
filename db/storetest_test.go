package db

import (
	"context"
	"testing"

	"github.com/nightjar-backup/nightjar/schedule/pass"
	"github.com/nightjar-backup/nightjar/schedule/pass/storetest"
)

// conformingDB is a DB with the user's side the suite uses, acting as admin.
type conformingDB struct{ *DB }

func (d conformingDB) QueueRun(ctx context.Context, job string, run pass.Run) (pass.Run, error) {
	return d.DB.QueueRun(ctx, job, run, admin)
}

func (d conformingDB) CancelRun(ctx context.Context, id int64) error {
	_, err := d.DB.CancelRun(ctx, id, admin)
	return err
}

// The SQLite store keeps the rules of pass.Store.
func TestStoreConforms(t *testing.T) {
	storetest.RunStoreTests(t, func(t *testing.T) storetest.Store {
		d, _ := newDB(t)
		return conformingDB{d}
	})
}
