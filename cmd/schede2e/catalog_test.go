//go:build linux

package schede2e

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// showRec is job show --json with the job's snapshots from the catalog.
type showRec struct {
	Name    string `json:"name"`
	Catalog struct {
		Repository string     `json:"repository"`
		SyncedAt   *time.Time `json:"synced_at"`
		SyncError  string     `json:"sync_error"`
		Snapshots  []struct {
			ID       string     `json:"id"`
			Time     *time.Time `json:"time"`
			Paths    []string   `json:"paths"`
			Pinned   bool       `json:"pinned"`
			State    string     `json:"state"`
			Problem  string     `json:"problem"`
			Verified string     `json:"verified"`
		} `json:"snapshots"`
		Forgotten int `json:"forgotten_count"`
	} `json:"catalog"`
}

func (w *world) showCatalog(name string) showRec {
	w.t.Helper()
	var s showRec
	decodeWhole(w.t, w.must(exitOK, "job", "show", name, "--json"), &s)
	return s
}

// catalogIDs is the IDs the catalog lists with state, sorted.
func (s showRec) catalogIDs(state string) []string {
	var ids []string
	for _, c := range s.Catalog.Snapshots {
		if c.State == state {
			ids = append(ids, c.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// serveUntil starts nightjar serve, waits until a line it prints contains
// want, stops it with SIGTERM and returns everything it printed. serve must
// then end on its own, with exit 0 or 130.
func (w *world) serveUntil(want string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := w.command(ctx, "serve", "--config", w.cfg)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var (
		mu    sync.Mutex
		out   strings.Builder
		found = make(chan struct{})
		once  sync.Once
		read  = make(chan struct{})
	)
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), want) {
				once.Do(func() { close(found) })
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()
	printed := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	select {
	case <-found:
	case err := <-exited:
		<-read
		w.t.Fatalf("serve ended (%v) before it printed %q:\n%s", err, want, printed())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		w.t.Fatal(err)
	}
	err := <-exited
	<-read
	if code := cmd.ProcessState.ExitCode(); err != nil && code != 130 {
		w.t.Fatalf("serve after SIGTERM: %v\n%s", err, printed())
	}
	return printed()
}

// The catalog is a cache of the repository: job show lists the job's
// snapshots from it, as a retention run left them (the forgotten one
// counted, not listed); after the state database is deleted, serve's start
// rebuilds it from the repository, with a snapshot made by hand; a record
// damaged since is manifest_invalid and keeps what was read of it; a sync
// that fails is a warning of serve, recorded for job show, and leaves
// the last listing.
func TestCatalogIsRebuiltFromTheRepository(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("a")
	makeTree(t, src, 21)
	w.writeConfig(header(`tick_interval = "1s"`, "") + job("a", "manual", "retention = { last = 2 }\nverify = \"on\"", src))
	for i := 0; i < 3; i++ {
		w.must(exitOK, "job", "run", "a", "--wait")
	}
	made := snapshotsOf(w.runsOf("a"))
	kept := slices.Sorted(slices.Values(made[1:]))
	show := w.showCatalog("a")
	if show.Catalog.SyncedAt == nil || show.Catalog.SyncError != "" || !slices.Equal(show.catalogIDs("present"), kept) || show.Catalog.Forgotten != 1 {
		t.Fatalf("after the retention runs job show lists %+v, want %v present, 1 forgotten, synced", show.Catalog, kept)
	}
	for _, s := range show.Catalog.Snapshots {
		if s.Verified != "ok" && s.Verified != "ok_deep" {
			t.Errorf("snapshot %s is listed as verified %q, want the verify run's ok or ok_deep", s.ID, s.Verified)
		}
	}

	if res := w.run("backup", src, "--tag", "job:a", "-r", w.repo, "--json"); res.Code != exitOK {
		t.Fatalf("backup by hand failed\n%s", res)
	}
	var byHand []string
	for _, s := range w.snapshots() {
		if !slices.Contains(made, s.ID) {
			byHand = append(byHand, s.ID)
		}
	}
	if len(byHand) != 1 {
		t.Fatalf("the repository holds %v besides the job's %v: want the one made by hand", byHand, made)
	}
	if err := os.RemoveAll(filepath.Dir(w.state)); err != nil {
		t.Fatal(err)
	}
	if show := w.showCatalog("a"); show.Catalog.SyncedAt != nil || len(show.Catalog.Snapshots) != 0 {
		t.Fatalf("a new state database lists %+v, want nothing, never synced", show.Catalog)
	}
	w.serveUntil("catalog of repository main synced")
	want := slices.Sorted(slices.Values(append(slices.Clone(kept), byHand[0])))
	show = w.showCatalog("a")
	if got := show.catalogIDs("present"); !slices.Equal(got, want) || show.Catalog.SyncedAt == nil {
		t.Fatalf("after serve's start job show lists %v (synced %v), want %v", got, show.Catalog.SyncedAt, want)
	}
	var oldTime *time.Time
	for _, s := range show.Catalog.Snapshots {
		if s.ID == kept[0] {
			oldTime = s.Time
		}
	}

	record := filepath.Join(w.repo, "snapshots", kept[0])
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0x01
	if err := os.Chmod(record, 0o600); err != nil { // objects may be read-only
		t.Fatal(err)
	}
	if err := os.WriteFile(record, data, 0o600); err != nil {
		t.Fatal(err)
	}
	w.serveUntil("catalog of repository main synced")
	show = w.showCatalog("a")
	if got := show.catalogIDs("manifest_invalid"); !slices.Equal(got, kept[:1]) {
		t.Fatalf("after damaging %s job show lists %+v as manifest_invalid", kept[0], got)
	}
	for _, s := range show.Catalog.Snapshots {
		if s.ID == kept[0] && (s.Problem == "" || s.Time == nil || !s.Time.Equal(*oldTime) || !slices.Equal(s.Paths, []string{src})) {
			t.Errorf("the damaged snapshot is listed as %+v: want its problem and what was read of it before", s)
		}
	}

	synced := *show.Catalog.SyncedAt
	if err := os.WriteFile(w.pw, []byte("not the password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := w.serveUntil("catalog of repository main not synced")
	if !strings.Contains(out, "wrong password") {
		t.Errorf("the failed sync's warning does not say why:\n%s", out)
	}
	show = w.showCatalog("a")
	if !strings.Contains(show.Catalog.SyncError, "wrong password") || !show.Catalog.SyncedAt.Equal(synced) || len(show.Catalog.Snapshots) != 3 {
		t.Errorf("after a failed sync job show has %+v: want the error, and the last good listing of %s", show.Catalog, synced)
	}
	if res := w.must(exitOK, "job", "show", "a"); !strings.Contains(res.Stdout, "last sync failed") {
		t.Errorf("job show does not report the failed sync:\n%s", res)
	}
}
