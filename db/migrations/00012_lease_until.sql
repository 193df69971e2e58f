-- A running run's lease: its owner promises to renew it before lease_until
-- (with each heartbeat, by lease_ns), and reclaim ends a run only when its
-- lease has run out (or its runner is provably gone). The owner's own
-- stale_after sets the length, so that a reclaimer whose config says less
-- cannot take a live run. Runs from before this migration have no lease and
-- are judged by their heartbeat as before.

-- +goose Up

ALTER TABLE runs ADD COLUMN lease_ns INTEGER CHECK (lease_ns > 0);
ALTER TABLE runs ADD COLUMN lease_until INTEGER;

-- +goose Down
ALTER TABLE runs DROP COLUMN lease_until;
ALTER TABLE runs DROP COLUMN lease_ns;
