-- The catalog keeps the scheduled run that made each snapshot: the run
-- the snapshot records (its `run` field, or the N of an older snapshot's
-- ID run-N-SOURCE), so that job show names it beside the snapshot's ID,
-- which no longer carries it. Rows from before this migration get it at
-- the next sync.

-- +goose Up

-- NULL: no run made it, or not known yet.
ALTER TABLE catalog_snapshots ADD COLUMN run INTEGER CHECK (run > 0);

-- +goose Down
ALTER TABLE catalog_snapshots DROP COLUMN run;
