package backendtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// testRangeOpener: a ranged read yields exactly the bytes Load reads, in
// whatever pieces the caller asks for, then io.EOF; one past the object's
// end fails rather than end short; a missing object wraps ErrNotFound.
func testRangeOpener(t *testing.T, be repo.Backend) {
	ro, ok := repo.Capability[repo.RangeOpener](be)
	if !ok {
		t.Skip("backend does not implement repo.RangeOpener")
	}
	ctx := context.Background()
	const size = 300000
	data := RandomBytes(9, size)
	h := repo.Handle{Type: repo.PackFile, Name: name(repo.PackFile, 20)}
	mustSave(t, be, h, data)
	for _, r := range []struct{ offset, length int64 }{{0, size}, {4321, 123456}, {size - 1, 1}, {17, 0}} {
		rc, err := ro.OpenRange(ctx, h, r.offset, r.length)
		skipUnsupported(t, err, "repo.RangeOpener")
		if err != nil {
			t.Fatalf("open %s at %d+%d: %v", h, r.offset, r.length, err)
		}
		var got []byte
		buf := make([]byte, 7777) // reads of an odd size, as a caller's buffer may be
		for {
			n, err := rc.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read %s at %d+%d: %v after %d bytes", h, r.offset, r.length, err, len(got))
			}
		}
		if err := rc.Close(); err != nil {
			t.Errorf("close the read of %s: %v", h, err)
		}
		if !bytes.Equal(got, data[r.offset:r.offset+r.length]) {
			t.Errorf("read %s at %d+%d: %d bytes, not the stored ones", h, r.offset, r.length, len(got))
		}
	}
	// Past the end: the open or a read fails, the read never ends in a
	// quiet io.EOF.
	if rc, err := ro.OpenRange(ctx, h, size-10, 20); err == nil {
		_, err = io.ReadAll(rc)
		rc.Close()
		if err == nil {
			t.Errorf("a read of %s past its end ended without an error", h)
		}
	}
	// Closed early, a read frees what it holds; the object reads again.
	rc, err := ro.OpenRange(ctx, h, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if err := rc.Close(); err != nil {
		t.Errorf("close a read half-way: %v", err)
	}
	missing := repo.Handle{Type: repo.PackFile, Name: name(repo.PackFile, 21)}
	rc, err = ro.OpenRange(ctx, missing, 0, 1)
	if err == nil {
		_, err = io.ReadAll(rc)
		rc.Close()
	}
	if !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("read a missing object: got %v, want ErrNotFound", err)
	}
}
