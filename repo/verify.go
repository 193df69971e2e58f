package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"
)

// Verification is the latest verdict on one snapshot: its own object,
// verifications/<snapshot ID>, so that losing the state database loses no
// verification failure. A new verification of the snapshot replaces it
// whole; a forget removes it with the snapshot.
type Verification struct {
	Snapshot      string    `json:"snapshot"` // the verified snapshot's full ID (also the object's name)
	Time          time.Time `json:"time"`     // when the verification ended
	Deep          bool      `json:"deep"`     // every chunk was read and decrypted; false: structural only
	OK            bool      `json:"ok"`
	Problems      []string  `json:"problems,omitempty"`       // the first MaxVerificationProblems, one line each
	ProblemsTotal int       `json:"problems_total,omitempty"` // all of them
	Hostname      string    `json:"hostname"`                 // where it ran
}

// MaxVerificationProblems bounds the problems a verification record lists;
// all are counted.
const MaxVerificationProblems = 10

// ErrVerificationNotFound: a snapshot has no verification record.
var ErrVerificationNotFound = errors.New("snapshot has no verification record")

// SaveVerification records the verdict on snapshot v.Snapshot, replacing
// any earlier one; v.Time is set to now when it is zero, v.Hostname always.
// The snapshot must exist. The caller holds a lock of the repository (a
// verification holds the shared lock while it reads), so that no forget
// removes the snapshot meanwhile.
func (r *Repository) SaveVerification(ctx context.Context, v *Verification) error {
	if !ValidSnapshotID(v.Snapshot) {
		return fmt.Errorf("save verification of %q: %w", v.Snapshot, ErrSnapshotNotFound)
	}
	switch ok, err := r.HasSnapshot(ctx, v.Snapshot); {
	case err != nil:
		return fmt.Errorf("save verification of %s: %w", v.Snapshot, err)
	case !ok:
		return fmt.Errorf("save verification of %s: %w", v.Snapshot, ErrSnapshotNotFound)
	}
	if v.Time.IsZero() {
		v.Time = r.now().UTC()
	}
	v.Hostname, _ = os.Hostname()
	v.ProblemsTotal = max(v.ProblemsTotal, len(v.Problems))
	if len(v.Problems) > MaxVerificationProblems {
		v.Problems = v.Problems[:MaxVerificationProblems]
	}
	plain, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode verification: %w", err)
	}
	h := Handle{Type: VerifyFile, Name: v.Snapshot}
	if err := r.be.Save(ctx, h, sealObject(r.seal, "verification", v.Snapshot, plain)); err != nil {
		return fmt.Errorf("save verification of %s: %w", v.Snapshot, err)
	}
	return nil
}

// VerifiedIDs returns, sorted, the IDs of the snapshots that have a
// verification record, from the names of the objects alone. A repository
// made before verification records has none.
func (r *Repository) VerifiedIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := r.be.List(ctx, VerifyFile, func(name string, _ int64) error {
		if ValidSnapshotID(name) {
			ids = append(ids, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list verifications: %w", err)
	}
	sort.Strings(ids)
	return ids, nil
}

// Verification loads the verification record of one snapshot; one that
// does not exist fails with an error wrapping ErrVerificationNotFound, a
// damaged one with an error naming it and wrapping ErrIntegrity.
func (r *Repository) Verification(ctx context.Context, snapshotID string) (*Verification, error) {
	data, err := r.be.Load(ctx, Handle{Type: VerifyFile, Name: snapshotID}, 0, -1)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("verification %s: %w", snapshotID, ErrVerificationNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load verification %s: %w", snapshotID, err)
	}
	plain, err := openObject(r.seal, "verification", snapshotID, data)
	if err != nil {
		return nil, fmt.Errorf("verification record %s: %w", snapshotID, err)
	}
	var v Verification
	if err := json.Unmarshal(plain, &v); err != nil {
		return nil, fmt.Errorf("verification %s: %v: %w", snapshotID, err, ErrIntegrity)
	}
	if v.Snapshot != snapshotID {
		return nil, fmt.Errorf("verification %s names snapshot %q: %w", snapshotID, v.Snapshot, ErrIntegrity)
	}
	return &v, nil
}

// Verifications loads every verification record, by snapshot ID. A record
// that cannot be read fails the call with an error naming it.
func (r *Repository) Verifications(ctx context.Context) (map[string]*Verification, error) {
	ids, err := r.VerifiedIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Verification, len(ids))
	for _, id := range ids {
		v, err := r.Verification(ctx, id)
		if errors.Is(err, ErrVerificationNotFound) {
			continue // forgotten since it was listed
		}
		if err != nil {
			return nil, err
		}
		out[id] = v
	}
	return out, nil
}

// VerifyFailed returns the IDs of the snapshots whose latest verification
// failed: what retention keeps without counting. A record that cannot be
// opened (damaged) counts as failed, so that damage never lets retention
// delete a snapshot it would otherwise have kept; other errors fail the
// call.
func (r *Repository) VerifyFailed(ctx context.Context) (map[string]bool, error) {
	ids, err := r.VerifiedIDs(ctx)
	if err != nil {
		return nil, err
	}
	failed := map[string]bool{}
	for _, id := range ids {
		v, err := r.Verification(ctx, id)
		switch {
		case errors.Is(err, ErrVerificationNotFound):
		case errors.Is(err, ErrIntegrity):
			failed[id] = true
		case err != nil:
			return nil, err
		case !v.OK:
			failed[id] = true
		}
	}
	return failed, nil
}

// checkVerifications reads every verification record: a damaged one is a
// problem; a record of a snapshot that no longer exists is listed in
// DanglingVerifications, a warning; the failed ones are listed in
// VerifyFailed.
func (c *checker) checkVerifications(ctx context.Context) error {
	ids, err := c.r.VerifiedIDs(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		v, err := c.r.Verification(ctx, id)
		if errors.Is(err, ErrVerificationNotFound) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !errors.Is(err, ErrIntegrity) && !errors.Is(err, ErrUnsupportedVersion) {
				return err
			}
			c.problem("verification "+id, err.Error())
			continue
		}
		switch ok, err := c.r.HasSnapshot(ctx, id); {
		case err != nil:
			return fmt.Errorf("verification %s: %w", id, err)
		case !ok:
			c.report.DanglingVerifications = append(c.report.DanglingVerifications, id)
		case !v.OK:
			c.report.VerifyFailed = append(c.report.VerifyFailed, id)
		}
	}
	return nil
}
