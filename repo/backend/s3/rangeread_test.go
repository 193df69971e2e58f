package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// readRange reads length bytes of h from offset through be's RangeOpener,
// in small reads as check takes them.
func readRange(be *s3.Backend, h repo.Handle, offset, length int64) ([]byte, error) {
	rc, err := be.OpenRange(context.Background(), h, offset, length)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var out bytes.Buffer
	_, err = io.CopyBuffer(&out, rc, make([]byte, 5000))
	return out.Bytes(), err
}

// A ranged read is one GET, past the read-ahead windows; a body the proxy
// cuts short is resumed from where it stopped, each time with one GET,
// and the bytes read are the object's.
func TestRangeReadResumesTruncatedBody(t *testing.T) {
	be, p := proxiedBackend(t)
	const size = 300 << 10
	h := repo.Handle{Type: repo.PackFile, Name: packName('r')}
	data := savePack(t, be, h.Name, size)
	gets(p)

	got, err := readRange(be, h, 1000, size-1000)
	if err != nil || !bytes.Equal(got, data[1000:]) {
		t.Fatalf("ranged read: %d bytes, %v; want the object's %d", len(got), err, size-1000)
	}
	if n := gets(p); n != 1 {
		t.Errorf("a ranged read made %d GETs, want 1", n)
	}
	if held := be.ReadAheadHeld(); held != 0 {
		t.Errorf("a ranged read left %d bytes in the read-ahead windows", held)
	}

	p.SetRules(faultproxy.Rule{Method: http.MethodGet, PathContains: "/data/", Times: 2, Fault: faultproxy.Truncate})
	got, err = readRange(be, h, 0, size)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ranged read through two truncated bodies: %d bytes, %v; want the object's %d", len(got), err, size)
	}
	if c := p.Counts(); c.Faults["truncate"] != 2 || c.Requests[http.MethodGet] != 3 {
		t.Errorf("%d truncated bodies and %d GETs, want 2 and 3 (the read and two resumes)", c.Faults["truncate"], c.Requests[http.MethodGet])
	}
}

// A body that breaks off more often than the retries allow fails the read
// with the server's classified error, in one line, after bodyRetries (3)
// resumes; it never ends quietly short.
func TestRangeReadFailsWhenRetriesRunOut(t *testing.T) {
	be, p := proxiedBackend(t)
	const size = 300 << 10
	h := repo.Handle{Type: repo.PackFile, Name: packName('f')}
	savePack(t, be, h.Name, size)
	gets(p)
	p.SetRules(faultproxy.Rule{Method: http.MethodGet, PathContains: "/data/", Fault: faultproxy.Truncate})
	got, err := readRange(be, h, 0, size)
	if !errors.Is(err, s3.ErrServer) {
		t.Fatalf("ranged read through bodies always cut short: %d bytes, %v; want ErrServer", len(got), err)
	}
	oneLine(t, err)
	if n := gets(p); n != 4 {
		t.Errorf("%d GETs, want 4 (the read and three resumes)", n)
	}
}

// check --read-data on S3 reads each pack with one GET; bodies cut short
// are resumed and the check stays clean; a pack whose bodies break off
// past the retries is reported as unreadable, naming the server's failure.
func TestCheckReadsEachPackWithOneGet(t *testing.T) {
	be, p := proxiedBackend(t)
	ctx := context.Background()
	r := repotest.New(t, be)
	for i := range 3 {
		if _, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
			for j := range 4 {
				b := backendtest.RandomBytes(uint64(10*i+j), 100<<10)
				if _, err := w.SaveBlob(ctx, repo.DataBlob, r.BlobID(b), b); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	var packs []string
	if err := be.List(ctx, repo.PackFile, func(name string, _ int64) error {
		packs = append(packs, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(packs) < 3 {
		t.Fatalf("%d packs, want one or more a write session", len(packs))
	}
	want := int64(len(packs))
	check := func() *repo.CheckReport {
		t.Helper()
		o, err := repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		p.ResetCounts()
		rep, err := o.Check(ctx, repo.CheckOptions{ReadDataFraction: 1})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}

	rep := check()
	if !rep.OK() || rep.PacksRead != len(packs) {
		t.Fatalf("check --read-data: %d packs read, problems %+v; want %d and none", rep.PacksRead, rep.Problems, len(packs))
	}
	if n := p.Counts().ByFolder["GET data"]; n != want {
		t.Errorf("check --read-data made %d GETs of packs for %d packs, want one each", n, want)
	}

	p.SetRules(faultproxy.Rule{Method: http.MethodGet, PathContains: "/data/", Times: 2, Fault: faultproxy.Truncate})
	rep = check()
	if !rep.OK() || rep.PacksRead != len(packs) {
		t.Fatalf("check --read-data through two truncated bodies: %d packs read, problems %+v; want %d and none", rep.PacksRead, rep.Problems, len(packs))
	}
	if n := p.Counts().ByFolder["GET data"]; n != want+2 {
		t.Errorf("check --read-data through two truncated bodies made %d GETs of packs, want %d (one a pack, one a resume)", n, want+2)
	}

	p.SetRules(faultproxy.Rule{Method: http.MethodGet, PathContains: "/data/" + packs[0][:2] + "/" + packs[0], Fault: faultproxy.Truncate})
	rep = check()
	if len(rep.Problems) == 0 {
		t.Fatal("check --read-data finds nothing wrong with a pack that cannot be read")
	}
	var found bool
	for _, pr := range rep.Problems {
		if pr.Object == "pack "+packs[0] && strings.Contains(pr.Error, s3.ErrServer.Error()) {
			found = true
		} else if !strings.HasPrefix(pr.Object, "data blob ") {
			t.Errorf("problem %q: %s; want only the unreadable pack and its blobs", pr.Object, pr.Error)
		}
	}
	if !found {
		t.Errorf("problems %s; want pack %s, unreadable, with the server's failure", fmt.Sprint(rep.Problems), packs[0][:8])
	}
}
