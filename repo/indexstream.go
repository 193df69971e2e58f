package repo

import (
	"context"
	"fmt"
	"sort"
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

// eachIndexFile calls fn with each of the named index files in turn,
// decoded; only one is in memory at a time.
func (r *Repository) eachIndexFile(ctx context.Context, names []string, fn func(name string, f indexFile) error) error {
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := r.readIndexBody(ctx, name)
		if err != nil {
			return fmt.Errorf("read index: %w (nightjar check tells more)", err)
		}
		if err := fn(name, f); err != nil {
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
