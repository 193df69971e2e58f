package backendtest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// Faulty's ranged reads count as loads, fail when a load is set up to,
// and are damaged as loads are, at the byte's place in the object
// whatever the pieces they are read in.
func TestFaultyRangedReads(t *testing.T) {
	ctx := context.Background()
	f := backendtest.NewFaulty(memory.New())
	h := repo.Handle{Type: repo.PackFile, Name: "0123456789abcdef"}
	data := backendtest.RandomBytes(3, 10000)
	if err := f.Save(ctx, h, data); err != nil {
		t.Fatal(err)
	}
	ro, ok := repo.Capability[repo.RangeOpener](f)
	if !ok {
		t.Fatal("Faulty has no RangeOpener")
	}
	f.FailLoad(repo.PackFile, 1)
	if _, err := ro.OpenRange(ctx, h, 0, 100); !errors.Is(err, backendtest.ErrInjected) {
		t.Errorf("ranged read set up to fail: %v, want ErrInjected", err)
	}
	f.CorruptLoads(repo.PackFile, backendtest.FlipByte(5000))
	rc, err := ro.OpenRange(ctx, h, 1000, 8000)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []byte
	buf := make([]byte, 999) // pieces that do not line up with the damaged byte
	for {
		n, err := rc.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := bytes.Clone(data[1000:9000])
	want[4000] ^= 1
	if !bytes.Equal(got, want) {
		t.Error("the damaged ranged read differs from the object with byte 5000 flipped")
	}
	if n := f.Loads(repo.PackFile); n != 2 {
		t.Errorf("%d loads counted, want the 2 ranged reads", n)
	}
}
