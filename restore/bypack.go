package restore

import (
	"context"
	"slices"

	"github.com/nightjar-backup/nightjar/repo"
)

// On object storage each read of a pack is a request, and the read-ahead
// fetches the planned reads of a pack as one span, held until the last of
// them is served (plan.go, repo.ReadPlanner). A big file cut into parts of
// partChunks chunks, handed out in the order of the walk, reads a pack
// from several parts at once, and two big files saved side by side share
// their packs: read file after file, every pack they share stays held
// from the first file's read to the second's, more than the read-ahead's
// budget. So, when the restore plans its reads, a big file whose chunks
// lie in long runs of one pack (one data packer writes a file's chunks one
// after another) is cut where its pack changes, and the parts of the big
// files met one after another in the walk are handed out pack by pack:
// each pack's span is fetched once, read by the parts in it, and let go.
const (
	// packRunChunks is the fewest chunks a big file's runs of one pack
	// hold on average for it to be read pack by pack. Packs filled side
	// by side alternate a file's chunks (runs of one or two): such a file
	// is read in parts of partChunks through the read-ahead's windows, as
	// without a plan, which make fewer requests for it than spans.
	packRunChunks = 16
	// batchChunks bounds the chunks of the big files whose parts wait to
	// be handed out pack by pack (their parts' bytes: about 16 GiB with
	// the default chunk sizes, their IDs 2 MiB).
	batchChunks = 1 << 16
)

// packPart is a part of a big file that reads one pack, and that pack.
type packPart struct {
	filePart
	pack repo.ID
}

// packParts cuts content into parts where the pack of its chunks changes;
// false when a chunk is not in the index or the runs of one pack are
// shorter than packRunChunks on average (the file is then read as
// without a plan).
func (rs *restorer) packParts(f *pendingFile) ([]packPart, bool) {
	content := f.node.Content
	var parts []packPart
	var offset int64
	idx := rs.r.Index()
	for i, id := range content {
		b, ok := idx.Lookup(id)
		if !ok {
			return nil, false
		}
		if n := len(parts); n == 0 || parts[n-1].pack != b.Pack {
			if n > 0 {
				parts[n-1].end = i
			}
			if (len(parts)+1)*packRunChunks > len(content) {
				return nil, false
			}
			parts = append(parts, packPart{filePart: filePart{file: f, first: i, offset: offset}, pack: b.Pack})
		}
		offset += int64(b.RawLength)
	}
	if len(parts) == 0 {
		return nil, false
	}
	parts[len(parts)-1].end = len(content)
	return parts, true
}

// readByPack reports whether a big file's content is read pack by pack
// (packParts), for the plan, which must plan the reads the parts make.
func (rs *restorer) readByPack(content []repo.ID) bool {
	_, ok := rs.packParts(&pendingFile{restoreFile: restoreFile{node: repo.Node{Content: content}}})
	return ok
}

// queueByPack holds the parts of a big file read pack by pack until the
// big files met one after another in the walk are all known, or until
// they hold batchChunks chunks; false when f is not read pack by pack.
func (rs *restorer) queueByPack(ctx context.Context, f *pendingFile) (bool, error) {
	if !rs.planned || len(f.node.Content) <= partChunks {
		return false, nil
	}
	parts, ok := rs.packParts(f)
	if !ok {
		return false, nil
	}
	f.parts.Store(int32(len(parts)))
	rs.batch = append(rs.batch, parts...)
	rs.batchChunks += len(f.node.Content)
	if rs.batchChunks >= batchChunks {
		return true, rs.flushBatch(ctx)
	}
	return true, nil
}

// flushBatch hands the parts held by queueByPack to the file workers,
// pack by pack in the order the packs were first met, so that the parts
// reading one pack run together and its span is let go before the next
// packs' are fetched.
func (rs *restorer) flushBatch(ctx context.Context) error {
	if len(rs.batch) == 0 {
		return nil
	}
	rank := map[repo.ID]int{}
	for _, p := range rs.batch {
		if _, ok := rank[p.pack]; !ok {
			rank[p.pack] = len(rank)
		}
	}
	slices.SortStableFunc(rs.batch, func(a, b packPart) int { return rank[a.pack] - rank[b.pack] })
	batch := rs.batch
	rs.batch, rs.batchChunks = nil, 0
	for i, p := range batch {
		select {
		case rs.parts <- p.filePart:
		case <-ctx.Done():
			// Finished here, so that each file's last part still
			// removes its temporary file.
			for _, q := range batch[i:] {
				rs.finishPart(ctx, q.filePart, ctx.Err())
			}
			return ctx.Err()
		}
	}
	return nil
}
