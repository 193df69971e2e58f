package restore

import (
	"context"

	"github.com/nightjar-backup/nightjar/repo"
)

// planReads tells the repository's backend, before the file workers start,
// the reads of pack data the restore of tree root will make for files
// read as one part (all but big files, read pack by pack: bypack.go, and
// the files whose blobs all lie in packs that big files are read from),
// when the backend plans its reads (object storage: it then fetches what
// a pack holds for the restore with one request, see repo.ReadPlanner).
// It walks the snapshot as the restore does, without restoring; a
// restore from a backend that does not plan (a local folder) spends no
// walk on it, and the plan is nil. The function returned ends the plan.
func (rs *restorer) planReads(ctx context.Context, root repo.ID) (end func(), plan *repo.ReadPlan, err error) {
	plan = rs.r.NewReadPlan()
	if plan == nil {
		return func() {}, nil, nil
	}
	// Entries the restore will refuse are left out; entries it may yet
	// fail to restore (a folder in the way) are planned all the same:
	// their reads stay planned until the budget needs the room.
	firstLink := map[inode]bool{}
	err = rs.r.Walk(ctx, root, rs.walkOptions(), repo.WalkVisitor{
		TreeError: func(dir *repo.WalkEntry, _ repo.ID, err error) error {
			if rs.storageFailed(dir.Path, err) {
				return err
			}
			return nil // the restore reports it
		},
		Node: func(e *repo.WalkEntry) error {
			if e.Unsafe {
				return nil
			}
			if refusedName(e.Path) != "" {
				if e.Node.Type == repo.NodeDir {
					return repo.SkipTree
				}
				return nil
			}
			if e.Node.Type != repo.NodeFile {
				return nil
			}
			if e.Node.Links > 1 {
				key := inode{e.Node.Device, e.Node.Inode}
				if firstLink[key] {
					return nil // linked to the first name, not read
				}
				firstLink[key] = true
			}
			// Big files are read pack by pack (bypack.go): a pack job
			// reads the chunks a pack holds of them with one stream, past
			// the read-ahead, which needs no plan; so are the other files
			// whose blobs all lie in their packs (Start leaves them out).
			// Files of more chunks than a batch holds are read in parts,
			// through the windows.
			switch n := len(e.Node.Content); {
			case n <= partChunks:
				plan.Add(e.Node.Content)
			case n <= batchChunks:
				plan.AddByPack(e.Node.Content)
			}
			return nil
		},
	})
	if err != nil {
		return nil, nil, err
	}
	return plan.Start(), plan, nil
}
