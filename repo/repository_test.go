package repo_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

func TestInitOpenRoundTrip(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	r := initRepoWith(t, be, password, repo.InitOptions{Now: func() time.Time { return created }})
	if r.Insecure() {
		t.Error("a repository made without Insecure reports Insecure")
	}
	if len(r.ID()) != 64 {
		t.Errorf("ID %q is not 64 hex digits", r.ID())
	}
	if keys := names(t, be, repo.KeyFile); len(keys) != 1 || keys[0] != r.KeyName() {
		t.Errorf("key files %v, want exactly the key in use %s", keys, r.KeyName())
	}

	o, err := repo.Open(ctx, be, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer o.Close()
	if o.ID() != r.ID() || o.KeyName() != r.KeyName() || o.ChunkerKey() != r.ChunkerKey() {
		t.Errorf("reopened repository differs: id %s key %s, want %s %s", o.ID(), o.KeyName(), r.ID(), r.KeyName())
	}
	got, want := o.Config(), r.Config()
	if got.ID != want.ID || !got.Created.Equal(created) || got.Chunker != testChunker ||
		got.Compression != "zstd" || got.PackSize != repo.DefaultPackSize || got.Version != repo.ConfigVersion {
		t.Errorf("reopened config %+v, want %+v created at %v", got, want, created)
	}
	if o.BlobID([]byte("x")) != r.BlobID([]byte("x")) {
		t.Error("blob IDs change when the repository is reopened")
	}
}

func TestInitRefusesAnExistingRepository(t *testing.T) {
	be := memory.New()
	r := initRepo(t, be)
	config := load(t, be, repo.Handle{Type: repo.ConfigFile, Name: "config"})
	_, err := repo.Init(context.Background(), be, []byte("other"), repo.InitOptions{KDF: fastKDF, Chunker: testChunker})
	if !errors.Is(err, repo.ErrAlreadyExists) {
		t.Fatalf("second init: %v, want ErrAlreadyExists", err)
	}
	if got := load(t, be, repo.Handle{Type: repo.ConfigFile, Name: "config"}); !bytes.Equal(got, config) {
		t.Error("refused init changed the config")
	}
	if keys := names(t, be, repo.KeyFile); len(keys) != 1 || keys[0] != r.KeyName() {
		t.Errorf("refused init left key files %v", keys)
	}
}

func TestInitRejects(t *testing.T) {
	tests := []struct {
		name     string
		password string
		opts     repo.InitOptions
	}{
		{"empty password", "", repo.InitOptions{KDF: fastKDF, Chunker: testChunker}},
		{"no chunker sizes", password, repo.InitOptions{KDF: fastKDF}},
		{"average not a power of two", password, repo.InitOptions{KDF: fastKDF, Chunker: repo.ChunkerParams{Min: 1000, Avg: 3000, Max: 9000}}},
		{"min above average", password, repo.InitOptions{KDF: fastKDF, Chunker: repo.ChunkerParams{Min: 1 << 20, Avg: 1 << 18, Max: 1 << 22}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := memory.New()
			if _, err := repo.Init(context.Background(), be, []byte(tt.password), tt.opts); err == nil {
				t.Fatal("init succeeded")
			}
			if _, err := be.Stat(context.Background(), repo.Handle{Type: repo.ConfigFile, Name: "config"}); !errors.Is(err, repo.ErrNotFound) {
				t.Errorf("failed init left a config: %v", err)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	initRepo(t, be)
	if _, err := repo.Open(ctx, memory.New(), repo.OpenOptions{Password: pw(password)}); !errors.Is(err, repo.ErrNoRepository) {
		t.Errorf("open of an empty backend: %v, want ErrNoRepository", err)
	}
	tests := []struct {
		name     string
		password func() ([]byte, error)
		want     error
	}{
		{"wrong password", pw("wrong"), repo.ErrWrongPassword},
		{"empty password", pw(""), repo.ErrWrongPassword},
		{"password one byte longer", pw(password + " "), repo.ErrWrongPassword},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := repo.Open(ctx, be, repo.OpenOptions{Password: tt.password})
			if !errors.Is(err, tt.want) {
				t.Fatalf("open: %v, want %v", err, tt.want)
			}
			if r != nil {
				t.Error("failed open returned a repository")
			}
		})
	}
	t.Run("password callback fails", func(t *testing.T) {
		boom := errors.New("no terminal")
		_, err := repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return nil, boom }})
		if !errors.Is(err, boom) {
			t.Errorf("open: %v, want the callback's error", err)
		}
	})
	t.Run("no password callback", func(t *testing.T) {
		if _, err := repo.Open(ctx, be, repo.OpenOptions{}); err == nil {
			t.Error("open of an encrypted repository without a password succeeded")
		}
	})
}

func TestInsecureRepository(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepoWith(t, be, "", repo.InitOptions{Insecure: true})
	if !r.Insecure() {
		t.Fatal("Insecure() is false")
	}
	if keys := names(t, be, repo.KeyFile); len(keys) != 0 {
		t.Errorf("insecure repository has key files %v", keys)
	}
	data := compressible(10000)
	id := saveBlob(t, r, data)
	flush(t, r)

	o, err := repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) {
		t.Error("asked for a password to open an unencrypted repository")
		return nil, errors.New("no")
	}})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer o.Close()
	if !o.Insecure() || o.ID() != r.ID() || o.BlobID(data) != id {
		t.Errorf("reopened: insecure %v id %s blob id %s; want true %s %s", o.Insecure(), o.ID(), o.BlobID(data).Short(), r.ID(), id.Short())
	}
	if err := o.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := o.LoadBlob(ctx, id); err != nil || !bytes.Equal(got, data) {
		t.Errorf("load blob: %v", err)
	}
	if _, err := o.AddKey(ctx, []byte("pw"), fastKDF); !errors.Is(err, repo.ErrInsecure) {
		t.Errorf("add key to an unencrypted repository: %v, want ErrInsecure", err)
	}

	t.Run("refuses key files", func(t *testing.T) {
		// Someone swapped an encrypted repository's config for an
		// unencrypted one: its key files give it away.
		other := memory.New()
		enc := initRepo(t, other)
		key := repo.Handle{Type: repo.KeyFile, Name: enc.KeyName()}
		store(t, be, key, load(t, other, key))
		_, err := repo.Open(ctx, be, repo.OpenOptions{})
		if !errors.Is(err, repo.ErrIntegrity) {
			t.Errorf("open of an unencrypted config beside key files: %v, want ErrIntegrity", err)
		}
	})
}

// Everything an encrypted repository stores is encrypted: no file holds
// file content, names, paths, host names or the repository ID in clear.
func TestEncryptedRepositoryHidesContent(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	content := random(7, 8192) // incompressible: stored as it is before sealing
	id := saveBlob(t, r, content)
	tree, err := writer(t, r).SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: "secret-file-name.txt", Type: repo.NodeFile, Content: []repo.ID{id}}}})
	if err != nil {
		t.Fatal(err)
	}
	flush(t, r)
	snap := &repo.Snapshot{ID: repo.NewSnapshotID(), Time: time.Now().UTC(), Hostname: "secret-host-name",
		Paths: []string{"/home/secret-path"}, Tree: tree}
	if err := flush(t, r).SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	lk, err := r.Lock(ctx, false, "secret-purpose")
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()

	secrets := map[string][]byte{
		"file content":  content[1000:1064],
		"file name":     []byte("secret-file-name"),
		"host name":     []byte("secret-host-name"),
		"path":          []byte("secret-path"),
		"lock purpose":  []byte("secret-purpose"),
		"repository ID": []byte(r.ID()),
		"blob ID":       id[:],
		"blob ID (hex)": []byte(id.String()),
	}
	for _, ft := range []repo.FileType{repo.ConfigFile, repo.KeyFile, repo.PackFile, repo.IndexFile, repo.SnapshotFile, repo.LockFile} {
		objects := names(t, be, ft)
		if ft == repo.ConfigFile {
			objects = []string{"config"}
		}
		for _, name := range objects {
			data := load(t, be, repo.Handle{Type: ft, Name: name})
			for what, secret := range secrets {
				if bytes.Contains(data, secret) {
					t.Errorf("%s %s holds the %s in clear", ft, name, what)
				}
			}
		}
	}
}

// Blob IDs are keyed with a secret of the repository: they are not the plain
// hash of the content, and two repositories give different IDs.
func TestBlobIDsAreKeyed(t *testing.T) {
	data := []byte("the same content in two repositories")
	a, b := initRepo(t, memory.New()), initRepo(t, memory.New())
	if a.BlobID(data) == b.BlobID(data) {
		t.Error("two repositories give the same blob ID for the same data")
	}
	if a.BlobID(data) == repo.ID(blake3.Sum256(data)) {
		t.Error("blob ID is the unkeyed BLAKE3 of the data")
	}
	if a.BlobID(data) != a.BlobID(bytes.Clone(data)) {
		t.Error("blob ID is not a function of the data")
	}
	if a.ChunkerKey() == b.ChunkerKey() {
		t.Error("two repositories have the same chunker key")
	}
	insecure := initRepoWith(t, memory.New(), "", repo.InitOptions{Insecure: true})
	if insecure.BlobID(data) == a.BlobID(data) || insecure.BlobID(data) == repo.ID(blake3.Sum256(data)) {
		t.Error("an unencrypted repository's blob IDs are not keyed with its own secret")
	}
}

func TestIDText(t *testing.T) {
	id := repo.ID(blake3.Sum256([]byte("x")))
	parsed, err := repo.ParseID(id.String())
	if err != nil || parsed != id {
		t.Errorf("ParseID(String()) = %v, %v", parsed, err)
	}
	if !strings.HasPrefix(id.String(), id.Short()) || len(id.Short()) != 8 {
		t.Errorf("Short() = %q is not the start of %q", id.Short(), id.String())
	}
	for _, bad := range []string{"", "00", strings.Repeat("g", 64), strings.Repeat("0", 63), strings.Repeat("0", 65)} {
		if _, err := repo.ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) succeeded", bad)
		}
	}
}

// Init must not take a failure to look for an existing config as its
// absence: it would write a new config (and master key) over a repository,
// making every backup in it unreadable.
func TestInitDoesNotReplaceConfigWhenStatFails(t *testing.T) {
	ctx := context.Background()
	be := backendtest.NewFaulty(memory.New())
	initRepo(t, be)
	h := repo.Handle{Type: repo.ConfigFile, Name: "config"}
	config := load(t, be, h)
	be.FailStat(repo.ConfigFile, 1)
	r, err := repo.Init(ctx, be, []byte("another password"), repo.InitOptions{KDF: fastKDF, Chunker: testChunker})
	if err == nil {
		r.Close()
		t.Error("init succeeded on a backend whose config could not be looked up")
	}
	if got := load(t, be, h); !bytes.Equal(got, config) {
		t.Fatal("init replaced the config of an existing repository: its master key and data are lost")
	}
	if _, err := openWith(t, be, password); err != nil {
		t.Errorf("the existing repository no longer opens: %v", err)
	}
}
