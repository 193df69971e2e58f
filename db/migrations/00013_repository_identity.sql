-- The identity of each configured repository (its name in the config):
-- the ID of the repository that scheduled runs found, or created, under
-- that name. A run that later finds another repository there (a disk
-- swapped, a folder re-created) fails as REPOSITORY_REPLACED, and one that
-- finds none (a backup disk not mounted) fails as NO_REPOSITORY instead of
-- creating a new one (create_if_missing creates only a repository never
-- seen). Seeded from what earlier syncs of the catalog and backup runs
-- recorded.

-- +goose Up
CREATE TABLE repository_identities (
    name          TEXT    PRIMARY KEY CHECK (name <> ''),
    repository_id TEXT    NOT NULL CHECK (repository_id <> ''),
    encrypted     INTEGER CHECK (encrypted IN (0, 1)), -- NULL: not known (seeded)
    first_seen_at INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO repository_identities (name, repository_id, first_seen_at, last_seen_at)
    SELECT name, repository_id, attempted_at, attempted_at FROM catalog_repositories
    WHERE repository_id IS NOT NULL;

-- The newest backup run's repository, for names no sync has read.
INSERT OR IGNORE INTO repository_identities (name, repository_id, first_seen_at, last_seen_at)
    SELECT j.repository, s.repository_id, r.ended_at, r.ended_at
    FROM run_snapshots s JOIN runs r ON r.id = s.run_id JOIN jobs j ON j.id = r.job_id
    WHERE r.ended_at IS NOT NULL
      AND r.id = (SELECT max(r2.id) FROM run_snapshots s2 JOIN runs r2 ON r2.id = s2.run_id JOIN jobs j2 ON j2.id = r2.job_id
                  WHERE j2.repository = j.repository AND r2.ended_at IS NOT NULL)
    GROUP BY j.repository;

-- +goose Down
DROP TABLE repository_identities;
