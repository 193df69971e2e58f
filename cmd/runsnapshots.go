package cmd

import (
	"context"
	"errors"
	"sync"

	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// verifyRunSnapshots fills in the verification of each snapshot of refs,
// the snapshots run recorded, that is in rp. A snapshot whose recorded ID
// is gone is looked for by the run and source it records
// (jobs.RunSnapshot), which find it when its record was rewritten under
// another ID (CurrentID); one not found is "forgotten". What cannot be
// read is a warning, and the snapshot is shown without it.
func verifyRunSnapshots(ctx context.Context, p *printer, rp *repo.Repository, run pass.Run, refs []snapshotRef) {
	var snaps []*repo.Snapshot // read once, when a recorded snapshot is gone
	readSnaps := sync.OnceValue(func() error {
		var err error
		snaps, _, err = jobs.ReadSnapshots(ctx, rp)
		return err
	})
	for k := range refs {
		s := &refs[k]
		if s.RepositoryID != rp.ID() {
			continue // made in a repository the job no longer uses
		}
		id := s.SnapshotID
		if ok, err := rp.HasSnapshot(ctx, id); err == nil && !ok {
			if err := readSnaps(); err != nil {
				p.Warnf("verification of snapshot %s is not shown: %v", id, err)
				continue
			}
			found := jobs.RunSnapshot(snaps, run, s.Source)
			if found == nil {
				s.Verified = "forgotten"
				continue
			}
			id, s.CurrentID = found.ID, found.ID
		}
		v, err := rp.Verification(ctx, id)
		switch {
		case errors.Is(err, repo.ErrVerificationNotFound):
			s.Verified = "-"
		case errors.Is(err, repo.ErrIntegrity), errors.Is(err, repo.ErrUnsupportedVersion):
			s.Verified, s.Problems = "verify_failed", []string{err.Error()}
		case err != nil:
			p.Warnf("verification of snapshot %s is not shown: %v", id, err)
		default:
			s.Verified = verifyState(v)
			if !v.OK {
				s.Problems = v.Problems
			}
		}
	}
}
