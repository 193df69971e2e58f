-- What nightjar status needs besides runs: the runtime heartbeat of the
-- scheduler's passes, and the last probe of each configured repository.

-- +goose Up

-- The newest pass of tick or serve on each host, one row per host and
-- mode: a scheduler that stopped (cron no longer calls tick, serve died)
-- is seen by its heartbeat growing old.
CREATE TABLE scheduler_passes (
    host    TEXT    NOT NULL CHECK (host <> ''),
    mode    TEXT    NOT NULL CHECK (mode IN ('tick', 'serve')),
    pid     INTEGER NOT NULL CHECK (pid > 0),
    version TEXT    NOT NULL,
    at      INTEGER NOT NULL,                -- when the pass began
    PRIMARY KEY (host, mode)
) WITHOUT ROWID;

-- The last probe of each configured repository (its name in the config).
-- claimed_at is when a pass last took the probe on, so that the passes of
-- several processes probe a repository once per probe_every; probed_at is
-- NULL until a probe has ended. A probe never holds a secret: error is a
-- message without password, password file path or credential.
CREATE TABLE repository_probes (
    name        TEXT    PRIMARY KEY CHECK (name <> ''),
    location    TEXT    NOT NULL DEFAULT '', -- as printed: no credential
    claimed_at  INTEGER NOT NULL,
    probed_at   INTEGER,
    reachable   INTEGER CHECK (reachable IN (0, 1)),
    error       TEXT    NOT NULL DEFAULT '', -- why it is not reachable
    encrypted   INTEGER CHECK (encrypted IN (0, 1)), -- NULL: not known (its config could not be read)
    free_bytes  INTEGER CHECK (free_bytes >= 0),     -- NULL: not known
    total_bytes INTEGER CHECK (total_bytes >= 0),
    CHECK (probed_at IS NULL OR reachable IS NOT NULL),
    CHECK (reachable IS NOT 0 OR error <> ''),
    CHECK ((free_bytes IS NULL) = (total_bytes IS NULL))
) WITHOUT ROWID;

-- +goose Down
DROP TABLE repository_probes;
DROP TABLE scheduler_passes;
