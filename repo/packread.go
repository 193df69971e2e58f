package repo

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"
)

// The blobs of one file, or of one folder of trees, sit next to each other
// in a pack. Read one by one, each is a request to an object store; read as
// runs, a pack costs one request or a few.
const (
	// runGap is the most bytes between two wanted blobs of a pack that a
	// run reads and throws away rather than start another read.
	runGap = 1 << 20
	// runMax bounds the bytes of one run (the memory it holds): a pack of
	// the default size (16 MiB) and the blob that crossed it.
	runMax = 20 << 20
)

// blobRun is the blobs of one pack read with one ranged read.
type blobRun struct {
	pack   ID
	offset int64
	length int64
	blobs  []IndexedBlob
}

// LoadBlobs reads the blobs ids (each once, however often it is named) and
// calls fn with each one's plaintext, valid only during the call. The
// blobs of a pack that lie near each other are read with one ranged read,
// so that a remote repository answers them with one request. Up to
// workers runs (at least one) are read at once, and fn is called from as
// many goroutines. A blob whose run cannot be read is read alone, from
// another place when it has one (LoadBlobTo).
func (r *Repository) LoadBlobs(ctx context.Context, ids []ID, workers int, fn func(id ID, plain []byte) error) error {
	runs, err := r.blobRuns(ids)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	for _, run := range runs {
		g.Go(func() error { return r.loadRun(gctx, run, fn) })
	}
	return g.Wait()
}

// blobRuns groups the blobs ids by pack, in the order of their offsets,
// and cuts each pack's into runs.
func (r *Repository) blobRuns(ids []ID) ([]blobRun, error) {
	byPack := map[ID][]IndexedBlob{}
	seen := make(map[ID]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		b, ok := r.idx.Lookup(id)
		if !ok {
			return nil, fmt.Errorf("blob %s: %w", id.Short(), ErrNotFound)
		}
		byPack[b.Pack] = append(byPack[b.Pack], b)
	}
	var runs []blobRun
	for pack, blobs := range byPack {
		slices.SortFunc(blobs, func(a, b IndexedBlob) int { return cmp.Compare(a.Offset, b.Offset) })
		var run *blobRun
		for _, b := range blobs {
			start, end := int64(b.Offset), int64(b.Offset)+int64(b.Length)
			if run == nil || start-(run.offset+run.length) > runGap || end-run.offset > runMax {
				runs = append(runs, blobRun{pack: pack, offset: start})
				run = &runs[len(runs)-1]
			}
			run.length = end - run.offset
			run.blobs = append(run.blobs, b)
		}
	}
	// Packs in a set order, so that reads of one pack follow each other.
	slices.SortFunc(runs, func(a, b blobRun) int {
		if c := slices.Compare(a.pack[:], b.pack[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.offset, b.offset)
	})
	return runs, nil
}

// loadRun reads one run and hands its blobs to fn; when the run cannot be
// read or a blob in it does not open, the blobs not handed yet are read
// one by one.
func (r *Repository) loadRun(ctx context.Context, run blobRun, fn func(ID, []byte) error) error {
	var plain []byte
	done := 0
	load := r.loadInto
	if run.blobs[0].Type == TreeBlob {
		load = r.loadTreeInto // a pack of trees may have a local copy
	}
	data, err := load(ctx, Handle{Type: PackFile, Name: run.pack.String()}, run.offset, int(run.length), nil)
	if err == nil {
		for _, b := range run.blobs {
			at := int64(b.Offset) - run.offset
			p, err := r.openBlob(b.PackedBlob, data[at:at+int64(b.Length)], &plain)
			if err != nil {
				break
			}
			if err := fn(b.ID, p); err != nil {
				return err
			}
			done++
		}
	}
	var buf BlobBuffer
	for _, b := range run.blobs[done:] {
		p, err := r.LoadBlobTo(ctx, b.ID, &buf)
		if err != nil {
			return err
		}
		if err := fn(b.ID, p); err != nil {
			return err
		}
	}
	return nil
}
