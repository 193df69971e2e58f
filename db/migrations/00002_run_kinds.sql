-- Runs get a kind and figures of their own.
--
-- kind says what a run does: 'backup' (every run before this migration),
-- and, as they are built, 'verify', 'retention', 'prune' and 'drill'. It is
-- not listed in a CHECK, so that a new kind needs no migration.
--
-- counters holds the named figures of any kind, as a JSON object of
-- integers ({"blobs_checked": 1200}); the backup figures keep their own
-- columns (bytes_read, bytes_added, files, files_skipped, skipped).

-- +goose Up
ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'backup' CHECK (kind <> '');
ALTER TABLE runs ADD COLUMN counters TEXT NOT NULL DEFAULT '{}'
    CHECK (json_valid(counters) AND json_type(counters) = 'object');

-- +goose Down
ALTER TABLE runs DROP COLUMN counters;
ALTER TABLE runs DROP COLUMN kind;
