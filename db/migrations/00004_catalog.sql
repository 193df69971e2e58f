-- The catalog: the state database's cache of the snapshots in each
-- configured repository, for fast listings (job show). The repository is
-- the truth: the catalog is rebuilt from it (serve's start, each retention
-- run), so that deleting the state database loses nothing the next sync
-- does not bring back.

-- +goose Up

-- One row per configured repository (its name in the config) that a sync
-- has tried: when the last sync succeeded, and the error of the last one
-- if it failed.
CREATE TABLE catalog_repositories (
    name          TEXT    PRIMARY KEY CHECK (name <> ''),
    repository_id TEXT    CHECK (repository_id <> ''), -- the ID the last good sync read
    synced_at     INTEGER,                              -- the last good sync; NULL: none yet
    attempted_at  INTEGER NOT NULL,                     -- the last sync, good or not
    sync_error    TEXT    NOT NULL DEFAULT '',          -- why the last sync failed; '' when it did not
    CHECK (synced_at IS NOT NULL OR sync_error <> '')
) WITHOUT ROWID;

-- The snapshots a sync saw. A snapshot gone from the repository stays as
-- 'forgotten'; one whose record cannot be read is 'manifest_invalid', with
-- its problem, and knows nothing but its ID.
CREATE TABLE catalog_snapshots (
    repository    TEXT    NOT NULL REFERENCES catalog_repositories (name) ON DELETE CASCADE,
    snapshot_id   TEXT    NOT NULL CHECK (snapshot_id <> ''),
    repository_id TEXT    NOT NULL CHECK (repository_id <> ''),
    time          INTEGER,                         -- NULL for a record that cannot be read
    host          TEXT    NOT NULL DEFAULT '',
    paths         TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(paths) AND json_type(paths) = 'array'),
    tags          TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(tags) AND json_type(tags) = 'array'),
    job           TEXT    CHECK (job <> ''),       -- from the tag job:NAME; NULL: made by no job
    pinned        INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
    state         TEXT    NOT NULL CHECK (state IN ('present', 'forgotten', 'manifest_invalid')),
    problem       TEXT    NOT NULL DEFAULT '',     -- why the record cannot be read
    first_seen_at INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL,                -- the last sync that found it in the repository
    CHECK (state <> 'manifest_invalid' OR problem <> ''),
    CHECK (state <> 'present' OR time IS NOT NULL),
    PRIMARY KEY (repository, snapshot_id)
) WITHOUT ROWID;

CREATE INDEX catalog_snapshots_job ON catalog_snapshots (job, time) WHERE job IS NOT NULL;

-- +goose Down
DROP TABLE catalog_snapshots;
DROP TABLE catalog_repositories;
