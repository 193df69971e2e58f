package jobs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

func TestSnapshotID(t *testing.T) {
	long := "/" + strings.Repeat("very-long-folder-name/", 10) + "leaf"
	for _, tc := range []struct {
		name   string
		run    int64
		source string
		want   string
	}{
		{"plain path", 42, "/daten", "run-42-daten"},
		{"separators replaced", 7, "/srv/www/site", "run-7-srv_www_site"},
		{"leading dot replaced", 3, "/.hidden", "run-3-_hidden"},
		{"dot dot replaced", 3, "/a/../b", "run-3-a____b"},
		{"root", 1, "/", "run-1-root"},
		{"spaces and unicode", 5, "/Mes documents/été", "run-5-Mes_documents___t__"},
		{"long paths keep their end", 9, long, "run-9-" + strings.ReplaceAll(long, "/", "_")[len(long)-(64-len("run-9-")):]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SnapshotID(tc.run, tc.source)
			if got != tc.want {
				t.Errorf("SnapshotID(%d, %q) = %q, want %q", tc.run, tc.source, got, tc.want)
			}
			if !repo.ValidSnapshotID(got) || len(got) > 64 {
				t.Errorf("%q is not a valid snapshot ID of at most 64 characters", got)
			}
		})
	}
}

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
	if len(res.Snapshots) != 1 || res.Snapshots[0].SnapshotID != SnapshotID(12, good) || res.Snapshots[0].RepositoryID != r.ID() {
		t.Errorf("snapshots = %+v, want the good source's run-12 snapshot", res.Snapshots)
	}
	if res.Figures.FilesSkipped != 1 || len(res.Figures.Skipped) != 1 || !strings.Contains(res.Figures.Skipped[0].Object, missing) {
		t.Errorf("figures = %+v, want the missing source skipped with its reason", res.Figures)
	}

	// The same run number again (a lost state database) must not collide.
	res, err = exec(good)
	if err != nil {
		t.Fatalf("second run 12: %v", err)
	}
	if id := res.Snapshots[0].SnapshotID; id == SnapshotID(12, good) || !strings.HasPrefix(id, "run-12-") {
		t.Errorf("second snapshot of run 12 is %q: want a distinct run-12- ID", id)
	}

	_, err = exec(missing)
	var ce *pass.ClassError
	if !errors.As(err, &ce) || ce.Code != "ALL_SOURCES_FAILED" || ce.Class != pass.ClassSource {
		t.Errorf("only a missing source: err = %v, want ALL_SOURCES_FAILED of class source", err)
	}
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
