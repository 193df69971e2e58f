package repo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Prune reads the index as a stream, one index file at a time, instead of
// loading it (LoadIndex): its memory then does not grow with the number of
// blobs, only with the size of the largest index file, which a write
// session caps at about maxBlobsPerIndex blobs.

// readIndexBody loads, verifies and decodes one index file.
func (r *Repository) readIndexBody(ctx context.Context, name string) (indexFile, error) {
	id, err := ParseID(name)
	if err != nil {
		return indexFile{}, fmt.Errorf("index %s: bad name: %w", name, ErrIntegrity)
	}
	data, err := r.be.Load(ctx, Handle{Type: IndexFile, Name: name}, 0, -1)
	if err != nil {
		return indexFile{}, err
	}
	if fileID(data) != id {
		return indexFile{}, fmt.Errorf("index %s: content does not match its name: %w", id.Short(), ErrIntegrity)
	}
	body, err := openObject(r.seal, "index", "", data)
	if err != nil {
		return indexFile{}, fmt.Errorf("index %s: %w", id.Short(), err)
	}
	f, err := decodeIndexBody(body)
	if err != nil {
		return indexFile{}, fmt.Errorf("index %s: %w", id.Short(), err)
	}
	return f, nil
}

// indexReadAhead is how many index files eachIndexFile reads and decodes
// ahead of the one it hands over: loading, hashing and decrypting them is
// most of the work, and four at a time keep the cores busy in 4 x 6 MiB.
const indexReadAhead = 4

// eachIndexFile calls fn with each of the named index files in turn, in
// the order given, decoded; at most indexReadAhead more are in memory.
func (r *Repository) eachIndexFile(ctx context.Context, names []string, fn func(name string, f indexFile) error) error {
	type result struct {
		f   indexFile
		err error
	}
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel, below: no read goes on after return
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]chan result, len(names))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	tokens := make(chan struct{}, indexReadAhead)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i, name := range names {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := r.readIndexBody(ctx, name)
				results[i] <- result{f, err}
			}()
		}
	}()
	for i, name := range names {
		var res result
		select {
		case res = <-results[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-tokens
		if res.err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(res.err, ErrIntegrity) {
				// Prune and stats need every entry: a damaged file is
				// replaced by repair index before they go on.
				return fmt.Errorf("read index: %w (run nightjar repair index first)", res.err)
			}
			return fmt.Errorf("read index: %w (nightjar check tells more)", res.err)
		}
		if err := fn(name, res.f); err != nil {
			return err
		}
	}
	return nil
}

// sortedIndexFileNames lists the index files, sorted by name.
func (r *Repository) sortedIndexFileNames(ctx context.Context) ([]string, error) {
	names, err := r.ListIndexFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("list index files: %w", err)
	}
	sort.Strings(names)
	return names, nil
}

// indexWriter writes index files of at most maxBlobsPerIndex blobs each
// from blobs added one at a time, in any order.
type indexWriter struct {
	r       *Repository
	pending []IndexedBlob
	written int   // index files written
	bytes   int64 // their bytes
}

// add adds a blob, writing an index file when maxBlobsPerIndex are held.
func (w *indexWriter) add(ctx context.Context, b IndexedBlob) error {
	w.pending = append(w.pending, b)
	if len(w.pending) >= maxBlobsPerIndex {
		return w.flush(ctx)
	}
	return nil
}

// flush writes the blobs held as one index file.
func (w *indexWriter) flush(ctx context.Context) error {
	if len(w.pending) == 0 {
		return nil
	}
	body := encodeIndexBody(sortedIndexFile(w.pending))
	data := sealObject(w.r.seal, "index", "", body)
	if err := w.r.be.Save(ctx, Handle{Type: IndexFile, Name: fileID(data).String()}, data); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	w.written++
	w.bytes += int64(len(data))
	w.pending = w.pending[:0]
	return nil
}
