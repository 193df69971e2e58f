package restore

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/nightjar-backup/nightjar/repo"
)

// On object storage each read of a pack is a request. A big file cut into
// parts of partChunks chunks, the parts handed out in the order of the
// walk, reads a pack from several parts at once, and two big files saved
// side by side share their packs: read file after file, part by part,
// each pack is read several times (through the read-ahead's windows, or
// as planned spans held until their last read, more than the read-ahead's
// budget). So, when the backend plans its reads (object storage), the big
// files are read pack by pack, as restic does: one job per pack reads
// every chunk of the batch's files that the pack holds, in the pack's
// order, with one stream (repo.StreamBlobsInOrder: past the read-ahead, a
// blob in memory at a time), and writes each chunk where it goes in its
// file. The other files whose blobs all lie in packs that big files are
// read from (small files a backup saved beside a big one: the plan leaves
// them out, repo.ReadPlan.ByPack) go with the batch too, so that such a
// pack is not read twice, a planned span for them beside a pack job's
// stream; a pack job finishes each file's part at its last chunk in the
// job, so that a file of one chunk is open only while it is written.
//
// batchChunks bounds the chunks of the files held for their pack jobs
// (their IDs and places: about 6 MiB; the files' bytes: about 16 GiB with
// the default chunk sizes). A file of more chunks is restored in parts, as
// from a local folder: its pack jobs alone would hold about 90 bytes a
// chunk beyond its content list, without a bound.
const batchChunks = 1 << 16

// batchFiles bounds the files of a batch that may stay open from one
// pack job to another, or through much of one: those whose chunks lie in
// more than one pack (big files, small files split between packs), and
// those of several chunks that share one with a file held before them
// (a shared chunk comes once in the pack's order, so every file that has
// it is open from there to its own chunks). With the next batch's jobs
// starting while the last of this one run, at most about twice this many
// are open at once.
const batchFiles = 32

// batchBriefFiles bounds the other files of a batch: one chunk, or
// several in one pack that no file held before them shares. Those held
// cost their nodes (a few hundred bytes each) until the batch is handed
// out, and each is open only from its first chunk to its last in its one
// pack job, where other such files' chunks lie between them only as far
// as the backup that wrote the pack saved files side by side. They are
// not counted with batchFiles: a pack that big files share with small
// files of several chunks (a source tree's) would otherwise be cut
// between batches, and each batch's job would read it again.
const batchBriefFiles = 1 << 14

// packJob is the chunks of the batch's big files that one pack holds, in
// the pack's order.
type packJob struct {
	chunks []jobChunk
}

// jobChunk is one chunk of a pack job: the file it goes to, at which
// offset, and where it lies in the pack.
type jobChunk struct {
	file   *pendingFile
	id     repo.ID
	offset int64  // in the file
	at     uint32 // in the pack
}

// queueByPack holds a file for the pack jobs of the batch: a big file, or
// one whose blobs all lie in packs that big files are read from
// (repo.ReadPlan.ByPack); false when the restore reads nothing pack by
// pack (a backend that does not plan: a local folder), the file is
// neither, has more than batchChunks chunks, or a chunk is not in the
// index (it is then restored in parts, and the missing blob reported).
// The batch is handed out when one of its bounds is reached, and at the
// walk's end: the files that share a pack are rarely next to each other
// in the walk (small files of several folders beside a big one).
func (rs *restorer) queueByPack(ctx context.Context, f *pendingFile) (bool, error) {
	n := len(f.node.Content)
	if rs.plan == nil || n > batchChunks {
		return false, nil
	}
	if n <= partChunks && !rs.plan.ByPack(f.node.Content) {
		return false, nil
	}
	brief, indexed := rs.briefInJob(f.node.Content)
	if !indexed {
		return false, nil
	}
	if brief {
		rs.batchBrief++
	} else {
		rs.batchOpen++
	}
	rs.batch = append(rs.batch, f)
	rs.batchChunks += n
	if rs.batchChunks >= batchChunks || rs.batchOpen >= batchFiles || rs.batchBrief >= batchBriefFiles {
		return true, rs.flushBatch(ctx)
	}
	return true, nil
}

// briefInJob tells whether a file of content, held for the batch, is open
// only within one pack job, from its first chunk to its last (see
// batchBriefFiles), and whether the index has every chunk of it. The
// chunks of such files of several chunks are kept in batchShared, so
// that a later file that shares one is not.
func (rs *restorer) briefInJob(content []repo.ID) (brief, indexed bool) {
	idx := rs.r.Index()
	var pack repo.ID
	brief = true
	for i, id := range content {
		b, ok := idx.Lookup(id)
		if !ok {
			return false, false
		}
		if i == 0 {
			pack = b.Pack
		} else if b.Pack != pack {
			brief = false
		}
		if _, ok := rs.batchShared[id]; ok && len(content) > 1 {
			brief = false
		}
	}
	if brief && len(content) > 1 {
		if rs.batchShared == nil {
			rs.batchShared = map[repo.ID]struct{}{}
		}
		for _, id := range content {
			rs.batchShared[id] = struct{}{}
		}
	}
	return brief, true
}

// packJobs groups the chunks of files by pack, the packs in the order
// they are first met, each job's chunks in the pack's order, and counts
// each file's jobs as its parts.
func packJobs(idx *repo.Index, files []*pendingFile) []*packJob {
	var jobs []*packJob
	byPack := map[repo.ID]*packJob{}
	for _, f := range files {
		var offset int64
		seen := map[*packJob]bool{}
		for _, id := range f.node.Content {
			b, _ := idx.Lookup(id) // every chunk is in the index (queueByPack)
			j := byPack[b.Pack]
			if j == nil {
				j = &packJob{}
				byPack[b.Pack] = j
				jobs = append(jobs, j)
			}
			if !seen[j] {
				seen[j] = true
				f.parts.Add(1)
			}
			j.chunks = append(j.chunks, jobChunk{file: f, id: id, offset: offset, at: b.Offset})
			offset += int64(b.RawLength)
		}
	}
	for _, j := range jobs {
		slices.SortStableFunc(j.chunks, func(a, b jobChunk) int { return cmp.Compare(a.at, b.at) })
	}
	return jobs
}

// flushBatch hands the pack jobs of the big files held by queueByPack to
// the file workers.
func (rs *restorer) flushBatch(ctx context.Context) error {
	if len(rs.batch) == 0 {
		return nil
	}
	jobs := packJobs(rs.r.Index(), rs.batch)
	rs.batch, rs.batchChunks, rs.batchOpen, rs.batchBrief, rs.batchShared = nil, 0, 0, 0, nil
	for i, j := range jobs {
		select {
		case rs.parts <- filePart{job: j}:
		case <-ctx.Done():
			// Finished here, so that each file's last part still
			// removes its temporary file.
			for _, j := range jobs[i:] {
				rs.finishJob(ctx, j, ctx.Err())
			}
			return ctx.Err()
		}
	}
	return nil
}

// runPackJob reads the chunks of job with one stream of its pack (where
// they lie at most 1 MiB apart) and writes each into its file, finishing
// a file's part after its last chunk in the job. A chunk that cannot be
// read is damage to its file alone: the job goes on with the next chunk,
// unless the storage failed (storageFailed).
// A file that failed is not written to further.
func (rs *restorer) runPackJob(ctx context.Context, j *packJob, buf *repo.BlobBuffer) {
	errs := map[*pendingFile]error{}
	left := map[*pendingFile]int{} // chunks of each file the job has still to write
	for _, c := range j.chunks {
		left[c.file]++
	}
	done := func(f *pendingFile) {
		if left[f]--; left[f] == 0 {
			delete(left, f)
			rs.finishPart(ctx, filePart{file: f}, errs[f])
		}
	}
	ids := make([]repo.ID, len(j.chunks))
	for i, c := range j.chunks {
		ids[i] = c.id
	}
	// A cancellation, or the storage's failure: no chunk after it is
	// written, and none at all when it came before the job.
	stop := ctx.Err()
	for next := 0; next < len(ids) && stop == nil; {
		from := next
		err := rs.r.StreamBlobsInOrder(ctx, ids[from:], buf, func(i int, data []byte) error {
			if err := ctx.Err(); err != nil {
				return &writeError{err}
			}
			c := j.chunks[from+i]
			next = from + i + 1
			if f := c.file; errs[f] == nil && !f.failed() {
				if err := rs.writeChunk(f, c.offset, data); err != nil {
					errs[f] = err
				}
			}
			done(c.file)
			return nil
		})
		var local *writeError
		switch {
		case errors.As(err, &local):
			stop = local.err
		case ctx.Err() != nil:
			// Cancelled while reading: the chunks left are not tried
			// one by one, each failing again.
			stop = ctx.Err()
		case err != nil && rs.storageFailed(j.chunks[next].file.shown, err):
			stop = err
		case err != nil:
			// The chunk at next could not be read.
			f := j.chunks[next].file
			if errs[f] == nil {
				errs[f] = &damageError{err}
			}
			done(f)
			next++
		}
	}
	for f := range left {
		err := errs[f]
		if err == nil {
			err = stop
		}
		rs.finishPart(ctx, filePart{file: f}, err)
	}
}

// writeChunk writes one chunk of a pack job at offset in f, creating f's
// temporary file first if no part did; a chunk of zeros is left a hole.
func (rs *restorer) writeChunk(f *pendingFile, offset int64, data []byte) error {
	if err := rs.openFile(f, false); err != nil {
		return err
	}
	if f.out == nil {
		return nil // another part failed to create it, and reported why
	}
	if isZero(data) {
		f.holes.Store(true)
	} else {
		f.writing.Lock()
		_, err := f.out.WriteAt(data, offset)
		f.writing.Unlock()
		if err != nil {
			return err
		}
	}
	f.written.Add(int64(len(data)))
	rs.prog.bytesDone.Add(int64(len(data)))
	return nil
}

// finishJob finishes the part each file of j had in it, with err.
func (rs *restorer) finishJob(ctx context.Context, j *packJob, err error) {
	done := map[*pendingFile]bool{}
	for _, c := range j.chunks {
		if !done[c.file] {
			done[c.file] = true
			rs.finishPart(ctx, filePart{file: c.file}, err)
		}
	}
}
