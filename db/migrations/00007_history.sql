-- History can be purged (scheduler.keep_runs, scheduler.keep_audit), and
-- the audit trail is read by job (`nightjar audit --job NAME`).
--
-- audit.job is the job a row is about: its target when that is a job, the
-- run's job when the target is "run N". It is stored, not joined, because
-- the audit trail is kept longer than runs (keep_audit > keep_runs), and
-- the row of a purged run must still be found by its job. Rows from before
-- this migration get it from their run, where that is still there.
--
-- runs_ended lets each pass find the runs old enough to purge without
-- reading the whole table.

-- +goose Up
ALTER TABLE audit ADD COLUMN job TEXT CHECK (job <> '');
UPDATE audit SET job = target WHERE target NOT LIKE 'run %';
UPDATE audit SET job = (SELECT j.name FROM runs r JOIN jobs j ON j.id = r.job_id WHERE 'run ' || r.id = audit.target)
    WHERE target LIKE 'run %';
CREATE INDEX audit_job ON audit (job, id) WHERE job IS NOT NULL;
CREATE INDEX runs_ended ON runs (ended_at) WHERE ended_at IS NOT NULL;

-- +goose Down
DROP INDEX runs_ended;
DROP INDEX audit_job;
ALTER TABLE audit DROP COLUMN job;
