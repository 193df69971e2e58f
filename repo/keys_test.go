package repo_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

func openWith(t *testing.T, be repo.Backend, pass string) (*repo.Repository, error) {
	t.Helper()
	r, err := repo.Open(context.Background(), be, repo.OpenOptions{Password: pw(pass)})
	if err == nil {
		t.Cleanup(r.Close)
	}
	return r, err
}

func keyNames(t *testing.T, r *repo.Repository) []string {
	t.Helper()
	infos, err := r.ListKeys(context.Background())
	if err != nil {
		t.Fatalf("list keys: %v", err)
	}
	var out []string
	for _, info := range infos {
		out = append(out, info.Name)
	}
	slices.Sort(out)
	return out
}

func TestKeyAddListRemove(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	data := compressible(5000)
	id := saveBlob(t, r, data)
	flush(t, r)

	second, err := r.AddKey(ctx, []byte("second password"), fastKDF)
	if err != nil {
		t.Fatalf("add key: %v", err)
	}
	infos, err := r.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 {
		t.Fatalf("ListKeys gives %d keys, want 2", len(infos))
	}
	for _, info := range infos {
		if info.KDF.Algorithm != "argon2id" || info.KDF.Time != fastKDF.Time || info.KDF.MemoryKiB != fastKDF.MemoryKiB || len(info.KDF.Salt) < 16 {
			t.Errorf("key %s stores KDF %+v, want %+v with a salt", info.Name, info.KDF, fastKDF)
		}
		if info.Created.IsZero() {
			t.Errorf("key %s has no creation time", info.Name)
		}
	}
	if bytes.Equal(infos[0].KDF.Salt, infos[1].KDF.Salt) {
		t.Error("two keys share a salt: salts must be random per key")
	}

	// Either password opens the repository and reads the same data.
	for _, pass := range []string{password, "second password"} {
		o, err := openWith(t, be, pass)
		if err != nil {
			t.Fatalf("open with %q: %v", pass, err)
		}
		if o.ID() != r.ID() {
			t.Errorf("open with %q gives repository %s, want %s", pass, o.ID(), r.ID())
		}
		if err := o.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := o.LoadBlob(ctx, id); err != nil || !bytes.Equal(got, data) {
			t.Errorf("open with %q: load blob: %v", pass, err)
		}
	}

	tests := []struct {
		name    string
		key     string
		message string // in the error: the full ID of the key in use
	}{
		{"the key in use", r.KeyName(), r.KeyName()},
		{"the key in use, by prefix", r.KeyName()[:8], "key " + r.KeyName() + " is the one in use"},
		{"unknown key", "ffffffffffff", ""},
		{"prefix too short", second.Name[:3], ""},
		{"empty name", "", ""},
	}
	for _, tt := range tests {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			if _, err := r.RemoveKey(ctx, tt.key); err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("RemoveKey(%q) = %v, want an error naming %q", tt.key, err, tt.message)
			}
			if got := keyNames(t, r); len(got) != 2 {
				t.Errorf("keys after refused remove: %v", got)
			}
		})
	}

	if removed, err := r.RemoveKey(ctx, second.Name[:8]); err != nil || removed != second.Name {
		t.Fatalf("remove the other key by prefix: %q, %v; want its full name %s", removed, err, second.Name)
	}
	if got := keyNames(t, r); !slices.Equal(got, []string{r.KeyName()}) {
		t.Errorf("keys after remove: %v, want only %s", got, r.KeyName())
	}
	if _, err := openWith(t, be, "second password"); !errors.Is(err, repo.ErrWrongPassword) {
		t.Errorf("open with the removed key's password: %v, want ErrWrongPassword", err)
	}
	if _, err := openWith(t, be, password); err != nil {
		t.Errorf("open with the remaining password: %v", err)
	}
}

func TestAddKeyRefusesEmptyPassword(t *testing.T) {
	r := initRepo(t, memory.New())
	if _, err := r.AddKey(context.Background(), nil, fastKDF); err == nil {
		t.Error("AddKey with an empty password succeeded")
	}
	if got := keyNames(t, r); len(got) != 1 {
		t.Errorf("keys: %v, want one", got)
	}
}

func TestChangePassword(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	data := random(3, 100000)
	id := saveBlob(t, r, data)
	flush(t, r)
	packs := names(t, be, repo.PackFile)
	oldKey := r.KeyName()

	info, err := r.ChangePassword(ctx, []byte("new password"), fastKDF)
	if err != nil {
		t.Fatalf("change password: %v", err)
	}
	if r.KeyName() != info.Name || info.Name == oldKey {
		t.Errorf("key in use is %s after the change, want the new %s", r.KeyName(), info.Name)
	}
	if got := keyNames(t, r); !slices.Equal(got, []string{info.Name}) {
		t.Errorf("keys after the change: %v, want only the new one", got)
	}
	if _, err := openWith(t, be, password); !errors.Is(err, repo.ErrWrongPassword) {
		t.Errorf("open with the old password: %v, want ErrWrongPassword", err)
	}
	o, err := openWith(t, be, "new password")
	if err != nil {
		t.Fatalf("open with the new password: %v", err)
	}
	if err := o.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := o.LoadBlob(ctx, id); err != nil || !bytes.Equal(got, data) {
		t.Errorf("data after the change: %v", err)
	}
	if got := names(t, be, repo.PackFile); !slices.Equal(got, packs) {
		t.Errorf("changing the password rewrote packs: %v, was %v", got, packs)
	}
}

// A key file with parameters past the limits (which anyone who may write to
// keys/ can plant: they are used before anything is authenticated) is
// refused by name without deriving anything, and does not stop the usual
// key from opening the repository; nightjar never writes such a key.
func TestKeyFileOverTheKDFLimitsIsRefusedByName(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	usual := keyNames(t, r)[0]
	data, err := be.Load(ctx, repo.Handle{Type: repo.KeyFile, Name: usual}, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	planted := strings.Repeat("f", 64)
	hostile := bytes.Replace(data, []byte(`"memory_kib":64,`), []byte(`"memory_kib":1048576,`), 1)
	if bytes.Equal(hostile, data) {
		t.Fatal("the key file does not hold the KDF memory the test rewrites")
	}
	if err := be.Save(ctx, repo.Handle{Type: repo.KeyFile, Name: planted}, hostile); err != nil {
		t.Fatal(err)
	}
	if _, err := openWith(t, be, password); err != nil {
		t.Fatalf("the usual key beside a planted one: %v", err)
	}
	if err := be.Remove(ctx, repo.Handle{Type: repo.KeyFile, Name: usual}); err != nil {
		t.Fatal(err)
	}
	_, err = openWith(t, be, password)
	want := "key " + planted + ": argon2id memory 1048576 KiB out of range 8..262144 KiB"
	if !errors.Is(err, repo.ErrIntegrity) || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("open with only the planted key: %v, want an integrity error saying %q", err, want)
	}

	over := fastKDF
	over.Time = 11
	if _, err := r.AddKey(ctx, []byte("another"), over); err == nil || !strings.Contains(err.Error(), "argon2id time 11 out of range 1..10") {
		t.Errorf("add a key past the limits: %v, want it refused naming the range", err)
	}
}

// Keys made before DefaultKDF changed (RFC 9106's second recommendation:
// 3 passes over 64 MiB, 4 lanes) still open the repository, beside keys
// made with today's default.
func TestKeyOfTheEarlierDefaultOpens(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	id := saveBlob(t, r, compressible(3000))
	flush(t, r)
	earlier := repo.KDFParams{Algorithm: "argon2id", Time: 3, MemoryKiB: 64 * 1024, Threads: 4}
	info, err := r.AddKey(ctx, []byte("an earlier password"), earlier)
	if err != nil {
		t.Fatalf("add a key with the earlier default: %v", err)
	}
	o, err := openWith(t, be, "an earlier password")
	if err != nil {
		t.Fatalf("open with the key of the earlier default: %v", err)
	}
	if o.KeyName() != info.Name {
		t.Errorf("opened with key %s, want %s", o.KeyName(), info.Name)
	}
	if err := o.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := o.LoadBlob(ctx, id); err != nil {
		t.Errorf("read a blob through the key of the earlier default: %v", err)
	}
}

// New keys never cost a guesser less memory-time than the earlier default
// (64 MiB over 3 passes), nor fall under OWASP's 46 MiB for one pass.
func TestDefaultKDFCostsNoLessThanTheEarlier(t *testing.T) {
	d := repo.DefaultKDF
	if got, want := uint64(d.Time)*uint64(d.MemoryKiB), uint64(3*64*1024); got < want {
		t.Errorf("DefaultKDF costs %d KiB-passes, less than the earlier default's %d", got, want)
	}
	if d.MemoryKiB < 46*1024 {
		t.Errorf("DefaultKDF holds %d KiB, less than 46 MiB", d.MemoryKiB)
	}
}
