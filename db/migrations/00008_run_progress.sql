-- A running run's heartbeat records how far it got: its figures go into
-- the run's figure columns (bytes_read, bytes_added, files, files_skipped,
-- counters; the result replaces them at the end), and what it works on now
-- into current_item, such as 'source /data', so that job show and runs
-- show can say where a running run is.

-- +goose Up
ALTER TABLE runs ADD COLUMN current_item TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE runs DROP COLUMN current_item;
