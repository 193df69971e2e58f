-- The runners table recorded live `serve` loops, but nothing read it: a
-- runner's liveness is judged from its runs' heartbeats, and on its own
-- host from its process (kill(pid, 0)). It is dropped rather than kept
-- written and unread.

-- +goose Up
DROP TABLE runners;

-- +goose Down
CREATE TABLE runners (
    id           TEXT    PRIMARY KEY CHECK (id <> ''),
    host         TEXT    NOT NULL,
    pid          INTEGER NOT NULL CHECK (pid > 0),
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
) WITHOUT ROWID;
