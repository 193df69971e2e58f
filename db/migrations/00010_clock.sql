-- Whose clock drives the database's passes: the real one (tick, serve and
-- job run --wait without --at) or a simulated one (--at, for tests and for
-- trying a config). --at writes runs, snapshots and next-run times dated at
-- the time it names, which would mislead a live scheduler: the first
-- command that drives the database with a clock records which, and the
-- other kind is refused from then on.

-- +goose Up
CREATE TABLE clock (
    id       INTEGER PRIMARY KEY CHECK (id = 1), -- one row at most
    mode     TEXT    NOT NULL CHECK (mode IN ('real', 'simulated')),
    since_at INTEGER NOT NULL                    -- when it was recorded (real time, Unix nanoseconds)
);

-- +goose Down
DROP TABLE clock;
