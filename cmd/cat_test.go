package cmd

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
)

// openForTest opens the repository at dir with the test password.
func openForTest(t *testing.T, dir string) *repo.Repository {
	t.Helper()
	be, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(context.Background(), be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte(cliPassword), nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// cat prints each kind of object decrypted: JSON that says what the
// object holds, a blob's exact bytes, and never key material or the
// password.
func TestCat(t *testing.T) {
	e := newCLIEnv(t)
	dir := e.initRepo("repo")
	src := filepath.Join(e.dir, "src")
	writeTree(t, src, map[string]string{"a": "alpha", "sub/b": "beta"})
	snap := e.backupSnapshot(dir, src)
	r := openForTest(t, dir)
	chunkerKey := r.ChunkerKey()
	secrets := []string{cliPassword, hex.EncodeToString(chunkerKey[:]), base64.StdEncoding.EncodeToString(chunkerKey[:])}

	catJSON := func(t *testing.T, args ...string) map[string]any {
		t.Helper()
		res := e.expect(ExitOK, append([]string{"cat", "-r", dir}, args...)...)
		for _, s := range secrets {
			if strings.Contains(res.stdout, s) {
				t.Errorf("cat %s shows a secret", args)
			}
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(res.stdout), &v); err != nil {
			t.Fatalf("cat %s: %v\n%s", args, err, res.stdout)
		}
		return v
	}

	t.Run("config", func(t *testing.T) {
		v := catJSON(t, "config")
		if v["id"] != r.ID() || v["version"] != float64(r.Config().Version) {
			t.Errorf("config %v, want id %s", v, r.ID())
		}
	})
	t.Run("snapshot by prefix", func(t *testing.T) {
		v := catJSON(t, "snapshot", snap[:6])
		if v["id"] != snap || v["tree"] == nil || !slices.Equal(toStrings(v["paths"]), []string{src}) {
			t.Errorf("snapshot %v, want %s of %s", v, snap, src)
		}
	})
	t.Run("tree", func(t *testing.T) {
		s, err := r.LoadSnapshot(context.Background(), snap)
		if err != nil {
			t.Fatal(err)
		}
		v := catJSON(t, "tree", s.Tree.String())
		if nodes, ok := v["nodes"].([]any); !ok || len(nodes) != 1 {
			t.Errorf("root tree %v, want one node (the first folder of %s)", v, src)
		}
	})
	t.Run("blob", func(t *testing.T) {
		id := r.BlobID([]byte("alpha"))
		res := e.expect(ExitOK, "cat", "-r", dir, "blob", id.String()[:10])
		if res.stdout != "alpha" {
			t.Errorf("blob = %q, want the file's bytes %q", res.stdout, "alpha")
		}
	})
	t.Run("key", func(t *testing.T) {
		keys := objectNames(t, dir, repo.KeyFile)
		v := catJSON(t, "key", keys[0])
		kdf, _ := v["kdf"].(map[string]any)
		if v["id"] != keys[0] || kdf["algorithm"] != "argon2id" {
			t.Errorf("key %v, want its name and KDF", v)
		}
		for field := range v {
			if !slices.Contains([]string{"id", "created", "hostname", "username", "kdf"}, field) {
				t.Errorf("key shows %q: only public parameters may be shown", field)
			}
		}
	})
	t.Run("index and pack", func(t *testing.T) {
		idx := objectNames(t, dir, repo.IndexFile)
		v := catJSON(t, "index", idx[0])
		packs, _ := v["packs"].([]any)
		if v["id"] != idx[0] || len(packs) == 0 {
			t.Fatalf("index %v, want its packs", v)
		}
		pack := packs[0].(map[string]any)
		p := catJSON(t, "pack", pack["id"].(string))
		if p["id"] != pack["id"] || len(p["blobs"].([]any)) != len(pack["blobs"].([]any)) {
			t.Errorf("pack %v: want the blobs the index lists for it: %v", p, pack)
		}
	})
	t.Run("lock", func(t *testing.T) {
		lock, err := r.Lock(context.Background(), false, "check")
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Unlock()
		name := objectNames(t, dir, repo.LockFile)[0]
		v := catJSON(t, "lock", name[:8])
		if v["id"] != name || v["purpose"] != "check" || v["exclusive"] != false {
			t.Errorf("lock %v, want the shared lock for check", v)
		}
	})

	dataID := r.BlobID([]byte("alpha")).String()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown type", []string{"trees", "ab"}, `nightjar: cannot cat "trees": want config, or one of index, snapshot, tree, blob, key, pack, lock and an ID`},
		{"no type", nil, "nightjar: cat needs a type: config, or one of index, snapshot, tree, blob, key, pack, lock and an ID"},
		{"config with an ID", []string{"config", "ab"}, "nightjar: cat config takes no ID"},
		{"no ID", []string{"snapshot"}, "nightjar: cat snapshot needs exactly one ID"},
		{"unknown snapshot", []string{"snapshot", "ffff0000"}, "nightjar: no snapshot ffff0000 in the repository"},
		{"unknown index", []string{"index", "ffff0000"}, "nightjar: no index file ffff0000 in the repository"},
		{"unknown blob", []string{"blob", "0000ffff"}, "nightjar: no blob 0000ffff in the repository's index"},
		{"blob ID not hex", []string{"blob", "xyz"}, `nightjar: invalid blob ID "xyz": want hex digits`},
		{"a data blob as a tree", []string{"tree", dataID}, "nightjar: blob " + dataID + " is a data blob, not a tree: use cat blob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.expect(ExitUsage, append([]string{"cat", "-r", dir}, tc.args...)...)
			if got := lines(res.stderr); !slices.Equal(got, []string{tc.want}) || res.stdout != "" {
				t.Errorf("stderr %q, stdout %q; want the one line %q", got, res.stdout, tc.want)
			}
		})
	}
}

// cat config of an unencrypted repository leaves out the keys its config
// holds.
func TestCatConfigOfInsecureRepository(t *testing.T) {
	e := newCLIEnv(t)
	dir := filepath.Join(e.dir, "plain")
	e.expect(ExitOK, "init", "-r", dir, "--insecure-no-encryption")
	r := openForTest(t, dir)
	key := r.Config().InsecureKey
	if key == nil {
		t.Fatal("an unencrypted repository without its keys in the config: the test proves nothing")
	}
	res := e.expect(ExitOK, "cat", "-r", dir, "config")
	for _, secret := range [][]byte{key.BlobID, key.Chunker} {
		if strings.Contains(res.stdout, base64.StdEncoding.EncodeToString(secret)) {
			t.Errorf("cat config shows a key of the repository:\n%s", res.stdout)
		}
	}
	if strings.Contains(res.stdout, "insecure_key") {
		t.Errorf("cat config shows insecure_key:\n%s", res.stdout)
	}
}

// toStrings converts a decoded JSON list of strings.
func toStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, s := range list {
		str, _ := s.(string)
		out = append(out, str)
	}
	return out
}
