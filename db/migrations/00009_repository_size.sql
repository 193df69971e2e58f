-- A repository probe also lists the repository's objects and records
-- their total size (nightjar_repository_size_bytes, repository list).

-- +goose Up

-- NULL: not known (never listed, or the listing failed).
ALTER TABLE repository_probes ADD COLUMN size_bytes INTEGER CHECK (size_bytes >= 0);

-- +goose Down
ALTER TABLE repository_probes DROP COLUMN size_bytes;
