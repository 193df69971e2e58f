package cmd

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// readTree reads every file under root, by path relative to it.
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[rel] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// copy copies snapshots into another repository: both restore bit-exact
// from the destination, which check --read-data finds clean; copying
// again copies nothing; blobs the destination has are not stored again;
// bad command lines are one line and exit 2.
func TestCopy(t *testing.T) {
	e := newCLIEnv(t)
	from, to := e.initRepo("from"), e.initRepo("to")
	src := filepath.Join(e.dir, "src")
	big := make([]byte, 3<<20) // several chunks
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	writeTree(t, src, map[string]string{"a": "alpha", "sub/big": string(big), "sub/deeper/b": "beta"})
	first := e.backupSnapshot(from, src)
	wantFirst := readTree(t, src)
	writeTree(t, src, map[string]string{"c": "gamma"})
	second := e.backupSnapshot(from, "--tag", "daily", src)
	wantSecond := readTree(t, src)
	fromFlags := []string{"--from-repo", from, "--from-password-file", e.pwFile}

	// A dry run says what would be copied and changes nothing.
	packsBefore := objectNames(t, to, repo.PackFile)
	res := e.expect(ExitOK, append([]string{"copy", "-r", to, "--dry-run"}, fromFlags...)...)
	want := []string{"would copy snapshot " + first[:8], "would copy snapshot " + second[:8],
		"dry run: would copy 2 snapshots, skip 0 copied before; nothing was changed"}
	if got := lines(res.stdout); !slices.Equal(got, want) {
		t.Errorf("dry run: %q, want %q", got, want)
	}
	if got := objectNames(t, to, repo.SnapshotFile); len(got) != 0 || !slices.Equal(objectNames(t, to, repo.PackFile), packsBefore) {
		t.Errorf("a dry run changed the destination: snapshots %v", got)
	}

	// The first snapshot alone, named by a prefix.
	res = e.expect(ExitOK, append([]string{"copy", "-r", to, "--json", first[:8]}, fromFlags...)...)
	var out copyJSON
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, res.stdout)
	}
	if len(out.Copied) != 1 || out.Copied[0].Source != first || len(out.Skipped) != 0 {
		t.Fatalf("copy of the first snapshot: %+v", out)
	}
	copies := map[string]string{first: out.Copied[0].Copy}

	// Then all of them, the source named by the environment: the first is
	// skipped, and of the second only what is new is stored: the file c
	// and the trees from / down to src (sub is unchanged).
	t.Setenv("NIGHTJAR_FROM_REPOSITORY", from)
	res = e.expect(ExitOK, "copy", "-r", to, "--json", "--from-password-file", e.pwFile)
	out = copyJSON{}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, res.stdout)
	}
	if len(out.Copied) != 1 || out.Copied[0].Source != second || len(out.Skipped) != 1 || out.Skipped[0] != (copiedJSON{first, copies[first]}) {
		t.Fatalf("copy of all: %+v, want %s copied and %s skipped", out, second, first)
	}
	copies[second] = out.Copied[0].Copy
	if want := 1 + len(strings.Split(strings.Trim(src, "/"), "/")) + 1; out.BlobsStored != want {
		t.Errorf("copying the second snapshot stored %d blobs, want %d: c and the trees from / to src", out.BlobsStored, want)
	}

	// Again, in text: nothing is copied.
	res = e.expect(ExitOK, "copy", "-r", to, "--from-password-file", e.pwFile)
	want = []string{
		"skipped snapshot " + first[:8] + ": copied before, as " + copies[first][:8],
		"skipped snapshot " + second[:8] + ": copied before, as " + copies[second][:8],
		"copied 0 snapshots, skipped 2 copied before; stored 0 blobs, 0 B",
	}
	if got := lines(res.stdout); !slices.Equal(got, want) {
		t.Errorf("copying again: %q, want %q", got, want)
	}
	if got := objectNames(t, to, repo.SnapshotFile); len(got) != 2 {
		t.Errorf("destination holds %d snapshots, want 2", len(got))
	}

	for id, files := range map[string]map[string]string{first: wantFirst, second: wantSecond} {
		target := filepath.Join(e.dir, "restore-"+id)
		e.expect(ExitOK, "restore", "-r", to, copies[id], "--target", target)
		got := readTree(t, filepath.Join(target, src))
		if len(got) != len(files) {
			t.Errorf("copy of %s restores %d files, want %d", id, len(got), len(files))
		}
		for name, content := range files {
			if got[name] != content {
				t.Errorf("copy of %s: %s differs from the source", id, name)
			}
		}
	}
	e.expect(ExitOK, "check", "-r", to, "--read-data")
	s := openForTest(t, to)
	copied, err := s.LoadSnapshot(t.Context(), copies[second])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(copied.Tags, []string{"daily"}) || copied.CopiedFrom == nil || copied.CopiedFrom.Snapshot != second {
		t.Errorf("copy of %s: tags %q, origin %+v; want its tags and origin", second, copied.Tags, copied.CopiedFrom)
	}

	for _, tc := range []struct {
		name string
		args []string
		env  string // NIGHTJAR_FROM_REPOSITORY
		want string
	}{
		{"no source", []string{"--from-password-file", e.pwFile}, "",
			"nightjar: no source repository given: use --from-repo LOCATION or set NIGHTJAR_FROM_REPOSITORY"},
		{"no source password", nil, from,
			"nightjar: open source repository " + from + ": no password for the source repository: use --from-password-file, --from-password-command, NIGHTJAR_FROM_PASSWORD_FILE or NIGHTJAR_FROM_PASSWORD"},
		{"unknown snapshot", []string{"--from-password-file", e.pwFile, "ffff0000"}, from,
			"nightjar: source repository: no snapshot ffff0000 in the repository"},
		{"into itself", []string{"--from-password-file", e.pwFile}, to,
			"nightjar: --from-repo " + to + " is the destination repository itself: copy needs two repositories"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NIGHTJAR_FROM_REPOSITORY", tc.env)
			res := e.expect(ExitUsage, append([]string{"copy", "-r", to}, tc.args...)...)
			if got := lines(res.stderr); !slices.Equal(got, []string{tc.want}) || res.stdout != "" {
				t.Errorf("stderr %q, stdout %q; want the one line %q", got, res.stdout, tc.want)
			}
		})
	}
}
