-- The first schema of nightjar's state database.
--
-- Times are INTEGER nanoseconds since the Unix epoch (UTC); NULL means
-- "not set". Rules that must always hold live here, as CHECKs and indexes,
-- so that no code path (nor a hand-written UPDATE) can break them.

-- +goose Up

-- Jobs as the configuration declared them. The TOML file is the source of
-- truth for which jobs exist; a job removed from it is soft-deleted
-- (deleted_at set) and keeps its runs. A name is unique among live jobs only:
-- a job removed and added again is a new row, its old runs stay with the old.
CREATE TABLE jobs (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL CHECK (name <> ''),
    spec        TEXT    NOT NULL,                 -- schedule spec and zone it was synchronised with
    priority    TEXT    NOT NULL DEFAULT 'normal'
                CHECK (priority IN ('low', 'normal', 'high', 'critical')),
    repository  TEXT    NOT NULL,                 -- repository name in the config
    bandwidth   INTEGER CHECK (bandwidth > 0),    -- bytes per second; NULL: unlimited, never 0
    paused      INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    next_run_at INTEGER,                          -- next scheduled slot; NULL: none (manual job)
    deleted_at  INTEGER,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE UNIQUE INDEX jobs_live_name ON jobs (name) WHERE deleted_at IS NULL;
CREATE INDEX jobs_due ON jobs (next_run_at) WHERE deleted_at IS NULL AND paused = 0;

-- job_id runs only after depends_on_id's last run fully succeeded.
CREATE TABLE job_dependencies (
    job_id        INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    depends_on_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    PRIMARY KEY (job_id, depends_on_id),
    CHECK (job_id <> depends_on_id)
) WITHOUT ROWID;

CREATE INDEX job_dependencies_depends_on ON job_dependencies (depends_on_id);

-- One execution of a job. A run is never deleted: an aborted run is an event.
CREATE TABLE runs (
    id               INTEGER PRIMARY KEY,
    job_id           INTEGER NOT NULL REFERENCES jobs (id),
    trigger          TEXT    NOT NULL CHECK (trigger IN ('schedule', 'manual', 'retry', 'catch_up')),
    attempt          INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1),
    priority         TEXT    NOT NULL DEFAULT 'normal'
                     CHECK (priority IN ('low', 'normal', 'high', 'critical')),
    scheduled_at     INTEGER NOT NULL,            -- the slot it stands for, or when it was requested
    not_before       INTEGER,                     -- retries wait for their backoff; NULL: at once
    queued_at        INTEGER NOT NULL,
    started_at       INTEGER,
    ended_at         INTEGER,
    heartbeat_at     INTEGER,
    delay_seconds    INTEGER GENERATED ALWAYS AS ((started_at - scheduled_at) / 1000000000) STORED,
    status           TEXT    NOT NULL DEFAULT 'queued'
                     CHECK (status IN ('queued', 'running', 'succeeded', 'partial_failure',
                                       'failed', 'cancelled', 'interrupted')),
    held_reason      TEXT,                        -- why a queued run waits
    cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
    error_class      TEXT CHECK (error_class IN ('transient', 'network', 'repository', 'busy',
                                                 'source', 'auth', 'integrity', 'security',
                                                 'config', 'cancelled', 'unknown')),
    error_code       TEXT CHECK (error_code <> ''),
    message          TEXT    NOT NULL DEFAULT '',
    bytes_read       INTEGER NOT NULL DEFAULT 0 CHECK (bytes_read >= 0),
    bytes_added      INTEGER NOT NULL DEFAULT 0 CHECK (bytes_added >= 0),
    files            INTEGER NOT NULL DEFAULT 0 CHECK (files >= 0),
    files_skipped    INTEGER NOT NULL DEFAULT 0 CHECK (files_skipped >= 0),
    skipped          TEXT    NOT NULL DEFAULT '[]'  -- JSON list of {"object", "reason"}
                     CHECK (json_valid(skipped) AND json_type(skipped) = 'array'),
    missed_slots     INTEGER NOT NULL DEFAULT 0 CHECK (missed_slots >= 0),
    owner            TEXT CHECK (owner <> ''),    -- fencing token of the runner that holds it
    runner           TEXT,                        -- host:pid of that runner

    -- A run that skipped files (counted or listed) did not fully succeed.
    CHECK (NOT (status = 'succeeded' AND (files_skipped > 0 OR json_array_length(skipped) > 0))),
    -- A succeeded run has no error; a failed one always has a class.
    CHECK (status <> 'succeeded' OR error_class IS NULL),
    CHECK (status <> 'failed' OR error_class IS NOT NULL),
    -- Only a queued run is held, and a held run says why.
    CHECK (held_reason IS NULL OR (status = 'queued' AND held_reason <> '')),
    -- A queued run has not started and belongs to no runner.
    CHECK (status <> 'queued' OR (started_at IS NULL AND ended_at IS NULL AND owner IS NULL)),
    -- A running run has a start, a heartbeat and an owner, and no end.
    CHECK (status <> 'running' OR (started_at IS NOT NULL AND heartbeat_at IS NOT NULL
                                   AND owner IS NOT NULL AND ended_at IS NULL)),
    -- An ended run has an end; only a cancelled one may never have started.
    CHECK (status IN ('queued', 'running') OR ended_at IS NOT NULL),
    CHECK (status IN ('queued', 'running', 'cancelled') OR started_at IS NOT NULL)
    -- No ordering CHECK between the times: a clock stepped back during a run
    -- must not make its result impossible to record.
);

-- At most one active (queued or running) run per job: the database itself
-- never lets two passes run the same job at once.
CREATE UNIQUE INDEX runs_one_active_per_job ON runs (job_id) WHERE status IN ('queued', 'running');
CREATE INDEX runs_job ON runs (job_id, id);
CREATE INDEX runs_status ON runs (status) WHERE status IN ('queued', 'running');

-- The snapshots a run made, by reference only: the repository holds the
-- snapshot itself, and its ID carries the run ID.
CREATE TABLE run_snapshots (
    run_id        INTEGER NOT NULL REFERENCES runs (id),
    repository_id TEXT    NOT NULL CHECK (repository_id <> ''),
    snapshot_id   TEXT    NOT NULL CHECK (snapshot_id <> ''),
    source        TEXT    NOT NULL,
    PRIMARY KEY (repository_id, snapshot_id)
) WITHOUT ROWID;

CREATE INDEX run_snapshots_run ON run_snapshots (run_id);

-- Who did what to which job or run, and when.
CREATE TABLE audit (
    id        INTEGER PRIMARY KEY,
    at        INTEGER NOT NULL,
    user_name TEXT    NOT NULL CHECK (user_name <> ''),
    host      TEXT    NOT NULL,
    action    TEXT    NOT NULL CHECK (action IN ('create', 'change', 'delete', 'pause', 'resume',
                                                 'trigger', 'cancel')),
    target    TEXT    NOT NULL CHECK (target <> ''),
    detail    TEXT    NOT NULL DEFAULT ''
);

CREATE INDEX audit_at ON audit (at);

-- The `serve` loops (and other long-lived runners) that are alive.
CREATE TABLE runners (
    id           TEXT    PRIMARY KEY CHECK (id <> ''),
    host         TEXT    NOT NULL,
    pid          INTEGER NOT NULL CHECK (pid > 0),
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
) WITHOUT ROWID;

-- +goose Down
DROP TABLE runners;
DROP TABLE audit;
DROP TABLE run_snapshots;
DROP TABLE runs;
DROP TABLE job_dependencies;
DROP TABLE jobs;
