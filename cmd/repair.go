package cmd

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

func repairCommand() *cli.Command {
	dryRun := func() cli.Flag {
		return &cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "only say what would change: change nothing, take no lock"}
	}
	return &cli.Command{
		Name:  "repair",
		Usage: "rebuild the index from the packs, salvage damaged packs, rewrite damaged snapshots (restic's repair)",
		Subcommands: []*cli.Command{
			{
				Name: "index", Usage: "rebuild the index from the headers of every pack, leaving out the packs that cannot be read",
				ArgsUsage: " ", Flags: append(repoFlags(), dryRun(), jsonFlag()), Action: runRepairIndex,
			},
			{
				Name:      "packs",
				Usage:     "store again the readable blobs of damaged packs (the packs named, or every pack found damaged when read whole), then delete them",
				ArgsUsage: "[PACK-ID...]", Flags: append(repoFlags(), dryRun(), jsonFlag()), Action: runRepairPacks,
			},
			{
				Name:      "snapshots",
				Usage:     "write a repaired copy (tag repaired) of every snapshot that refers to missing or damaged trees or data",
				ArgsUsage: "[SNAPSHOT-ID...]",
				Flags: append(repoFlags(), dryRun(), jsonFlag(),
					&cli.BoolFlag{Name: "forget", Usage: "remove the damaged original of each snapshot repaired"}),
				Action: runRepairSnapshots,
			},
		},
	}
}

// repairArgs are what a repair command was asked to do.
type repairArgs struct {
	dryRun bool
	packs  []repo.ID
	snaps  []string
	forget bool
}

func repairIndexArgs(c *cli.Context) (repairArgs, error) {
	if c.NArg() > 0 {
		return repairArgs{}, usageError{fmt.Errorf("repair index takes no arguments, got %q", c.Args().First())}
	}
	return repairArgs{dryRun: c.Bool("dry-run")}, nil
}

func repairPacksArgs(c *cli.Context) (repairArgs, error) {
	a := repairArgs{dryRun: c.Bool("dry-run")}
	for _, s := range c.Args().Slice() {
		id, err := repo.ParseID(s)
		if err != nil {
			return a, usageError{fmt.Errorf("pack id %q: want the 64 hex digits of a pack's name", s)}
		}
		a.packs = append(a.packs, id)
	}
	return a, nil
}

func repairSnapshotsArgs(c *cli.Context) (repairArgs, error) {
	a := repairArgs{dryRun: c.Bool("dry-run"), snaps: c.Args().Slice(), forget: c.Bool("forget")}
	if a.dryRun && a.forget {
		return a, usageError{fmt.Errorf("--forget with --dry-run: a dry run removes nothing; give one of them")}
	}
	return a, nil
}

// lockForRepair takes the exclusive lock a repair needs, unless it is a
// dry run; release is a no-op then. release sets *errp, when nil, to the
// error of a lock lost meanwhile (repo.Lock.Release).
func lockForRepair(c *cli.Context, r *repo.Repository, a repairArgs, purpose string) (release func(errp *error), err error) {
	if a.dryRun {
		return func(*error) {}, nil
	}
	lock, err := lockRepo(c.Context, r, true, purpose)
	if err != nil {
		return nil, err
	}
	return lock.Release, nil
}

func runRepairIndex(c *cli.Context) error {
	return withRepository(c, repairIndexArgs, func(c *cli.Context, p *printer, r *repo.Repository, a repairArgs) (err error) {
		release, err := lockForRepair(c, r, a, "repair index")
		if err != nil {
			return err
		}
		defer release(&err)
		res, err := r.RepairIndex(c.Context, repo.RepairIndexOptions{DryRun: a.dryRun})
		if err != nil {
			return fmt.Errorf("repair index: %w", err)
		}
		if p.jsonOut {
			return p.JSON(struct {
				DryRun bool `json:"dry_run"`
				*repo.RepairIndexResult
			}{a.dryRun, res})
		}
		printRepairIndex(p, res, a.dryRun)
		return nil
	})
}

func printRepairIndex(p *printer, res *repo.RepairIndexResult, dryRun bool) {
	for _, name := range res.DamagedIndexFiles {
		p.Warnf("index file %s is damaged: %s", shortID(name), dryRunWord(dryRun, "replaced", "would be replaced"))
	}
	for _, u := range res.UnreadablePacks {
		if u.KeptBlobs > 0 {
			p.Warnf("pack %s (%s): %s; its %d intact blobs stay indexed until nightjar repair packs salvages them", u.Pack, bytesText(u.Size), u.Reason, u.KeptBlobs)
			continue
		}
		p.Warnf("pack %s (%s) cannot be read and is left out of the index: %s", u.Pack, bytesText(u.Size), u.Reason)
	}
	p.Printf("packs read:  %d, %d unreadable\n", res.PacksRead, len(res.UnreadablePacks))
	p.Printf("blobs:       %d indexed, %d no index listed before, %d listed before and lost\n", res.Blobs, res.BlobsAdded, res.BlobsDropped)
	if dryRun {
		p.Printf("dry run: nothing was changed\n")
		return
	}
	p.Printf("index files: %d written (%s), %d old ones removed\n", res.IndexFilesWritten, bytesText(res.BytesWritten), res.IndexFilesRemoved)
	if res.BlobsDropped > 0 {
		p.Printf("the next backup stores again what it still has of the %d lost blobs; nightjar repair snapshots rewrites the snapshots that need them\n", res.BlobsDropped)
	}
}

func runRepairPacks(c *cli.Context) error {
	return withRepository(c, repairPacksArgs, func(c *cli.Context, p *printer, r *repo.Repository, a repairArgs) (err error) {
		release, err := lockForRepair(c, r, a, "repair packs")
		if err != nil {
			return err
		}
		defer release(&err)
		res, err := r.RepairPacks(c.Context, repo.RepairPacksOptions{Packs: a.packs, DryRun: a.dryRun})
		if err != nil {
			return fmt.Errorf("repair packs: %w", err)
		}
		if p.jsonOut {
			return p.JSON(struct {
				DryRun bool `json:"dry_run"`
				*repo.RepairPacksResult
			}{a.dryRun, res})
		}
		for _, d := range res.DamagedPacks {
			p.Warnf("pack %s is damaged (%s): %d blobs %s, %d lost", d.Pack, d.Reason, d.BlobsSalvaged, dryRunWord(a.dryRun, "salvaged", "can be salvaged"), d.BlobsLost)
		}
		p.Printf("packs read:  %d, %d damaged\n", res.PacksRead, len(res.DamagedPacks))
		if a.dryRun {
			p.Printf("dry run: nothing was changed\n")
			return nil
		}
		p.Printf("salvaged:    %d blobs into %d new packs; %d damaged packs deleted\n", res.BlobsSalvaged, res.PacksWritten, res.PacksRemoved)
		if res.Index != nil {
			printRepairIndex(p, res.Index, false)
		}
		if res.BlobsLost > 0 {
			p.Printf("lost:        %d blobs: the next backup stores again what it still has of them; nightjar repair snapshots rewrites the snapshots that need them\n", res.BlobsLost)
		}
		return nil
	})
}

// dryRunWord picks the words of a done or a dry-run change.
func dryRunWord(dryRun bool, done, would string) string {
	if dryRun {
		return would
	}
	return done
}

// warnIndexDamage names the index files LoadIndex skipped as damaged.
func warnIndexDamage(p *printer, r *repo.Repository) {
	damaged, fromHeaders := r.IndexDamage()
	for _, d := range damaged {
		p.Warnf("index file %s is damaged and was skipped (%v)", shortID(d.Name), d.Err)
	}
	if len(damaged) > 0 {
		p.Warnf("%d packs no readable index file lists were indexed from their headers instead: run nightjar repair index", fromHeaders)
	}
}

func runRepairSnapshots(c *cli.Context) error {
	return withRepository(c, repairSnapshotsArgs, func(c *cli.Context, p *printer, r *repo.Repository, a repairArgs) (err error) {
		if !a.dryRun {
			// Removing originals is destructive; writing copies is not.
			lock, err := lockRepo(c.Context, r, a.forget, "repair snapshots")
			if err != nil {
				return err
			}
			defer lock.Release(&err)
		}
		if err := r.LoadIndex(c.Context); err != nil {
			return err
		}
		warnIndexDamage(p, r)
		var ids []string
		for _, ref := range a.snaps {
			s, err := findSnapshot(c.Context, r, ref, snapshotFilter{})
			if err != nil {
				return err
			}
			ids = append(ids, s.ID)
		}
		res, err := r.RepairSnapshots(c.Context, repo.RepairSnapshotsOptions{IDs: ids, DryRun: a.dryRun, Forget: a.forget})
		if err != nil {
			return fmt.Errorf("repair snapshots: %w", err)
		}
		if p.jsonOut {
			return p.JSON(struct {
				DryRun bool `json:"dry_run"`
				*repo.RepairSnapshotsResult
			}{a.dryRun, res})
		}
		for _, u := range res.Unreadable {
			p.Warnf("snapshot file %s cannot be read and is left alone: %s", u.Path, u.Reason)
		}
		for _, rs := range res.Repaired {
			for _, rm := range rs.Removed {
				p.Printf("snapshot %s: %s: %s\n", shortID(rs.Original), rm.Path, rm.Reason)
			}
			switch {
			case a.dryRun:
				p.Printf("snapshot %s: would be copied without %d entries\n", shortID(rs.Original), len(rs.Removed))
			case rs.Forgotten:
				p.Printf("snapshot %s: repaired as %s (tag %s), original removed\n", shortID(rs.Original), shortID(rs.Repaired), repo.RepairedTag)
			default:
				p.Printf("snapshot %s: repaired as %s (tag %s)\n", shortID(rs.Original), shortID(rs.Repaired), repo.RepairedTag)
			}
		}
		for _, id := range res.KeptPinned {
			p.Warnf("snapshot %s is pinned: its damaged original was kept (unpin it, then forget it)", shortID(id))
		}
		p.Printf("snapshots:   %d read, %d damaged\n", res.Snapshots, len(res.Repaired))
		if a.dryRun {
			p.Printf("dry run: nothing was changed\n")
		}
		return nil
	})
}
