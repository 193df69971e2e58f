package cmd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// tag changes the tags of the snapshots named, or of those the filters
// let through, keeps their IDs, says what it did line by line, and
// refuses bad command lines with one line and exit 2.
func TestTag(t *testing.T) {
	e := newCLIEnv(t)
	dir := e.initRepo("repo")
	src := filepath.Join(e.dir, "src")
	writeTree(t, src, map[string]string{"a": "alpha"})
	first := e.backupSnapshot(dir, src)
	second := e.backupSnapshot(dir, "--tag", "daily", src)
	ids := objectNames(t, dir, repo.SnapshotFile)
	tagsOf := func(id string) []string {
		t.Helper()
		s, err := openForTest(t, dir).LoadSnapshot(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return s.Tags
	}

	steps := []struct {
		name        string
		args        []string
		want        []string // stdout lines
		first, last []string // tags after
	}{
		{"add to one snapshot by prefix", []string{"--add", "offsite", first[:6]},
			[]string{"changed tags of snapshot " + first[:8] + ": offsite", "changed 1 snapshots, 0 unchanged"},
			[]string{"offsite"}, []string{"daily"}},
		{"filter by tag: remove and add", []string{"--tag", "daily", "--remove", "daily", "--add", "weekly,monthly"},
			[]string{"changed tags of snapshot " + second[:8] + ": weekly, monthly", "changed 1 snapshots, 0 unchanged"},
			[]string{"offsite"}, []string{"weekly", "monthly"}},
		{"all snapshots, one has the tag already", []string{"--add", "offsite"},
			[]string{"changed tags of snapshot " + second[:8] + ": weekly, monthly, offsite",
				"snapshot " + first[:8] + " has these tags already: offsite", "changed 1 snapshots, 1 unchanged"},
			[]string{"offsite"}, []string{"weekly", "monthly", "offsite"}},
		{"set on latest", []string{"--set", "keep", "latest"},
			[]string{"changed tags of snapshot " + second[:8] + ": keep", "changed 1 snapshots, 0 unchanged"},
			[]string{"offsite"}, []string{"keep"}},
		{"set nothing removes all", []string{"--set", ""},
			[]string{"changed tags of snapshot " + first[:8] + ": (no tags)", "changed tags of snapshot " + second[:8] + ": (no tags)",
				"changed 2 snapshots, 0 unchanged"},
			nil, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			res := e.expect(ExitOK, append([]string{"tag", "-r", dir}, st.args...)...)
			if got := lines(res.stdout); !slices.Equal(got, st.want) {
				t.Errorf("stdout %q, want %q", got, st.want)
			}
			if got := tagsOf(first); !slices.Equal(got, st.first) {
				t.Errorf("first snapshot's tags %q, want %q", got, st.first)
			}
			if got := tagsOf(second); !slices.Equal(got, st.last) {
				t.Errorf("second snapshot's tags %q, want %q", got, st.last)
			}
			if got := objectNames(t, dir, repo.SnapshotFile); !slices.Equal(got, ids) {
				t.Errorf("snapshots are now %v, were %v: a tag change keeps the IDs", got, ids)
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		res := e.expect(ExitOK, "tag", "-r", dir, "--json", "--add", "x", first)
		var out tagJSON
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
			t.Fatalf("%v\n%s", err, res.stdout)
		}
		if len(out.Changed) != 1 || out.Changed[0].ID != first || !slices.Equal(out.Changed[0].Tags, []string{"x"}) || len(out.Unchanged) != 0 {
			t.Errorf("json %+v, want %s changed to [x]", out, first)
		}
	})

	t.Run("a job's tag removed is warned about", func(t *testing.T) {
		job := e.backupSnapshot(dir, "--tag", "job:home", src)
		res := e.expect(ExitOK, "tag", "-r", dir, "--set", "kept", job)
		want := "warning: snapshot " + job[:8] + " lost its tag job:home: job home's retention and verification no longer count it"
		if got := lines(res.stderr); !slices.Equal(got, []string{want}) {
			t.Errorf("stderr %q, want %q", got, want)
		}
		res = e.expect(ExitOK, "tag", "-r", dir, "--add", "job:home", job)
		if res.stderr != "" {
			t.Errorf("adding a job's tag warns: %q", res.stderr)
		}
	})

	t.Run("busy", func(t *testing.T) {
		lock, err := openForTest(t, dir).Lock(context.Background(), false, "backup")
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Unlock()
		res := e.expect(ExitBusy, "tag", "-r", dir, "--add", "y", first)
		if got := lines(res.stderr); len(got) != 1 || !strings.Contains(got[0], "shared lock for backup") {
			t.Errorf("stderr %q, want one line naming the backup's lock", got)
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no change", []string{first}, `nightjar: tag needs --add, --remove or --set with at least one tag (--set "" removes all tags)`},
		{"set with add", []string{"--set", "a", "--add", "b"}, "nightjar: --set cannot be combined with --add or --remove: give --set alone, or --add and --remove"},
		{"unknown snapshot", []string{"--add", "a", "ffff0000"}, "nightjar: no snapshot ffff0000 in the repository"},
		{"no snapshot matches the filters", []string{"--add", "a", "--host", "elsewhere"}, "nightjar: no snapshot matches the filters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.expect(ExitUsage, append([]string{"tag", "-r", dir}, tc.args...)...)
			if got := lines(res.stderr); !slices.Equal(got, []string{tc.want}) || res.stdout != "" {
				t.Errorf("stderr %q, stdout %q; want the one line %q", got, res.stdout, tc.want)
			}
		})
	}
	if got := tagsOf(first); !slices.Equal(got, []string{"x"}) {
		t.Errorf("refused command lines changed tags: %q", got)
	}
}
