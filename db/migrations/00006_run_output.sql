-- Runs keep what their hooks and command sources printed (issue 14): the
-- tail of each hook's standard output and error, and of each command
-- source's standard error, bounded by the executor (64 KiB a hook), so
-- that runs show RUN tells why a hook failed. Runs from before it have
-- none ('').

-- +goose Up
ALTER TABLE runs ADD COLUMN output TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE runs DROP COLUMN output;
