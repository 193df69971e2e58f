package jobs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err   error
		class string
	}{
		{repo.ErrWrongPassword, pass.ClassAuth},
		{fmt.Errorf("load: %w", repo.ErrIntegrity), pass.ClassIntegrity},
		{fmt.Errorf("lock: %w", repo.ErrBusy), pass.ClassBusy},
		{repo.ErrNoRepository, pass.ClassRepository},
		{context.Canceled, pass.ClassCancelled},
		{&fs.PathError{Op: "write", Path: "/r/data/x", Err: errors.New("input/output error")}, pass.ClassRepository},
		{errors.New("something else"), pass.ClassUnknown},
		{fmt.Errorf("save data/ab/abcd: %w: SignatureDoesNotMatch", s3.ErrAccessDenied), pass.ClassAuth},
		{fmt.Errorf("open: %w", s3.ErrExpiredToken), pass.ClassAuth},
		{fmt.Errorf("open: %w %q", s3.ErrNoBucket, "b"), pass.ClassRepository},
		{fmt.Errorf("open: %w: it is in eu-west-1", s3.ErrWrongRegion), pass.ClassRepository},
		{fmt.Errorf("save: %w", s3.ErrClockSkew), pass.ClassNetwork},
		{fmt.Errorf("load: %w: %w", s3.ErrNetwork, errors.New("connection refused")), pass.ClassNetwork},
		{fmt.Errorf("%w s3:h: no bucket", s3.ErrBadLocation), pass.ClassConfig},
		{fmt.Errorf("save: %w: SlowDown: reduce your rate", s3.ErrServer), pass.ClassNetwork},
		{fmt.Errorf("open: %w: x509: certificate signed by unknown authority", s3.ErrUntrusted), pass.ClassConfig},
		{fmt.Errorf("prune: delete pack 1234: %w: lock 99 not refreshed", repo.ErrLockLost), pass.ClassBusy},
		{fmt.Errorf("save snapshot: %w: %w", repo.ErrLockLost, context.Canceled), pass.ClassBusy},
		{&pass.ClassError{Class: pass.ClassNetwork, Code: "X", Err: errors.New("kept")}, pass.ClassNetwork},
	} {
		var ce *pass.ClassError
		if !errors.As(Classify(tc.err), &ce) || ce.Class != tc.class {
			t.Errorf("Classify(%v) = %v, want class %s", tc.err, ce, tc.class)
		}
	}
}

func TestExecutorBacksUpEachSourceIntoItsOwnSnapshot(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.MkdirAll(good, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(good, "f"), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	r := repotest.New(t, memory.New())
	exec := func(sources ...string) (pass.Result, error) {
		e := &Executor{
			Open: func(context.Context, string) (*repo.Repository, error) { return r, nil },
			Sources: func(string) ([]SourceSpec, []string) {
				var specs []SourceSpec
				for _, s := range sources {
					specs = append(specs, SourceSpec{Path: s})
				}
				return specs, []string{"t"}
			},
		}
		return e.Execute(context.Background(), pass.JobDef{Name: "j", Repository: "r"}, pass.Run{ID: 12, Kind: pass.KindBackup}, func(pass.Progress) {})
	}

	res, err := exec(good, missing)
	if err != nil {
		t.Fatalf("one good source: %v", err)
	}
	if len(res.Snapshots) != 1 || res.Snapshots[0].RepositoryID != r.ID() {
		t.Fatalf("snapshots = %+v, want the good source's snapshot", res.Snapshots)
	}
	first := checkRunSnapshot(t, r, res.Snapshots[0].SnapshotID, 12, good)
	if res.Figures.FilesSkipped != 1 || len(res.Figures.Skipped) != 1 || !strings.Contains(res.Figures.Skipped[0].Object, missing) {
		t.Errorf("figures = %+v, want the missing source skipped with its reason", res.Figures)
	}

	// The same run number again (a lost state database) must not collide.
	res, err = exec(good)
	if err != nil {
		t.Fatalf("second run 12: %v", err)
	}
	if id := checkRunSnapshot(t, r, res.Snapshots[0].SnapshotID, 12, good); id == first {
		t.Errorf("second snapshot of run 12 has the first one's ID %s", id)
	}

	// A source that does not exist, or whose folder above does not, is a
	// configuration error, which is not retried; it is not reported as
	// having vanished while it was read.
	missingParent := filepath.Join(dir, "never", "there")
	for _, sources := range [][]string{{missing}, {missingParent}, {missing, missingParent}} {
		_, err = exec(sources...)
		var ce *pass.ClassError
		if !errors.As(err, &ce) || ce.Code != CodeSourceMissing || ce.Class != pass.ClassConfig || pass.Retryable(ce.Class) {
			t.Errorf("only missing sources %v: err = %v, want SOURCE_MISSING of class config, not retried", sources, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "vanished") || !strings.Contains(msg, "does not exist") || strings.Contains(msg, "\n") {
			t.Errorf("only missing sources %v: message %q, want one line saying the source does not exist", sources, msg)
		}
		for _, src := range sources {
			if !strings.Contains(err.Error(), src) {
				t.Errorf("message %q does not name the missing source %s", err, src)
			}
		}
	}
}

// checkRunSnapshot checks that the snapshot id is in r with an ID of the
// kind the command line gives (32 hex digits), and records the run, the
// job (its tag) and the source; it returns id.
func checkRunSnapshot(t *testing.T, r *repo.Repository, id string, run int64, source string) string {
	t.Helper()
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Errorf("snapshot ID %q: want 32 hex digits, as the command line gives", id)
	}
	s, err := r.LoadSnapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Run != run || RunOf(s) != run || JobOf(s.Tags) != "j" || !slices.Equal(s.Paths, []string{source}) {
		t.Errorf("snapshot %s records run %d, job %q, paths %v: want run %d, job j, paths [%s]", id, s.Run, JobOf(s.Tags), s.Paths, run, source)
	}
	return id
}

// The executor dispatches on the run's kind: one it does not know (a run
// queued by a newer nightjar) fails as a config error, touching nothing.
func TestExecutorRefusesAnUnknownKind(t *testing.T) {
	for _, kind := range []string{"", "teleport"} {
		t.Run("kind "+kind, func(t *testing.T) {
			opened := false
			e := &Executor{
				Open: func(context.Context, string) (*repo.Repository, error) {
					opened = true
					return nil, errors.New("must not be opened")
				},
				Sources: func(string) ([]SourceSpec, []string) { return []SourceSpec{{Path: "/x"}}, nil },
			}
			_, err := e.Execute(context.Background(), pass.JobDef{Name: "j", Repository: "r"}, pass.Run{ID: 1, Kind: kind}, func(pass.Progress) {})
			var ce *pass.ClassError
			if !errors.As(err, &ce) || ce.Class != pass.ClassConfig || ce.Code != CodeUnknownKind {
				t.Errorf("err = %v, want a config error %s", err, CodeUnknownKind)
			}
			if opened {
				t.Error("the repository was opened for a run of an unknown kind")
			}
		})
	}
}

// A backup reports its progress as it begins each source, with the
// figures of the sources before it.
func TestExecutorReportsProgressPerSource(t *testing.T) {
	dir := t.TempDir()
	var sources []SourceSpec
	for _, name := range []string{"one", "two"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "f"), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		sources = append(sources, SourceSpec{Path: p})
	}
	r := repotest.New(t, memory.New())
	e := &Executor{
		Open:    func(context.Context, string) (*repo.Repository, error) { return r, nil },
		Sources: func(string) ([]SourceSpec, []string) { return sources, nil },
	}
	var got []pass.Progress
	res, err := e.Execute(context.Background(), pass.JobDef{Name: "j", Repository: "r"}, pass.Run{ID: 3, Kind: pass.KindBackup},
		func(p pass.Progress) { got = append(got, p) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Current != "source "+sources[0].Path || got[1].Current != "source "+sources[1].Path {
		t.Fatalf("progress %+v, want one report per source, in order", got)
	}
	if got[0].Figures.Files != 0 || got[1].Figures.Files != 1 || res.Figures.Files != 2 {
		t.Errorf("files in progress %d, %d and at the end %d; want 0, 1, 2", got[0].Figures.Files, got[1].Figures.Files, res.Figures.Files)
	}
}
