package cmd

import (
	"fmt"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

func statsCommand() *cli.Command {
	return &cli.Command{
		Name:  "stats",
		Usage: "show how much the snapshots hold",
		Description: "--mode restore-size (the default): the files a restore of each snapshot would write,\n" +
			"summed over the snapshots. --mode raw-data: the distinct blobs the snapshots use, each\n" +
			"counted once, as the repository stores them (after deduplication and compression).",
		ArgsUsage: "[SNAPSHOT...]",
		Flags: append(append(readRepoFlags(),
			&cli.StringFlag{Name: "mode", Value: "restore-size", Usage: "what to count: `MODE` restore-size or raw-data"},
			jsonFlag(),
		), snapshotSelectFlags()...),
		Action: runStats,
	}
}

// restoreSizeJSON is stats --json --mode restore-size, with restic's field
// names.
type restoreSizeJSON struct {
	Mode          string `json:"mode"`
	SnapshotCount int    `json:"snapshots_count"`
	repo.RestoreSize
}

// rawDataJSON is stats --json --mode raw-data, with restic's field names.
type rawDataJSON struct {
	Mode          string `json:"mode"`
	SnapshotCount int    `json:"snapshots_count"`
	repo.RawData
	CompressionRatio float64 `json:"compression_ratio"` // plaintext bytes per stored byte; 0 without data
}

func runStats(c *cli.Context) error {
	p := newPrinter(c)
	mode := c.String("mode")
	if mode != "restore-size" && mode != "raw-data" {
		return usageError{fmt.Errorf("--mode %q: want restore-size or raw-data", mode)}
	}
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.LoadIndex(c.Context); err != nil {
		return err
	}
	snaps, err := selectSnapshots(c, r, c.Args().Slice())
	if err != nil {
		return err
	}
	if mode == "restore-size" {
		out := restoreSizeJSON{Mode: mode, SnapshotCount: len(snaps)}
		for _, s := range snaps {
			if err := r.AddRestoreSize(c.Context, s.Tree, &out.RestoreSize); err != nil {
				return fmt.Errorf("stats of snapshot %s: %w", shortID(s.ID), err)
			}
		}
		if p.jsonOut {
			return p.JSON(out)
		}
		p.Printf("Snapshots:    %d\n", len(snaps))
		p.Printf("Total size:   %s (%d bytes)\n", humanize.IBytes(uint64(out.Bytes)), out.Bytes)
		p.Printf("Files:        %d\n", out.Files)
		p.Printf("Folders:      %d\n", out.Dirs)
		p.Printf("Others:       %d\n", out.Others)
		return nil
	}
	counter := r.NewRawDataCounter()
	for _, s := range snaps {
		if err := counter.Add(c.Context, s.Tree); err != nil {
			return fmt.Errorf("stats of snapshot %s: %w", shortID(s.ID), err)
		}
	}
	out := rawDataJSON{Mode: mode, SnapshotCount: len(snaps), RawData: counter.Stats}
	if out.StoredBytes > 0 {
		out.CompressionRatio = float64(out.RawBytes) / float64(out.StoredBytes)
	}
	if out.Missing > 0 {
		p.Warnf("%d blobs the snapshots use are not in the index: not counted (run nightjar check)", out.Missing)
	}
	if p.jsonOut {
		return p.JSON(out)
	}
	p.Printf("Snapshots:          %d\n", len(snaps))
	p.Printf("Stored size:        %s (%d bytes)\n", humanize.IBytes(uint64(out.StoredBytes)), out.StoredBytes)
	p.Printf("Uncompressed size:  %s (%d bytes)\n", humanize.IBytes(uint64(out.RawBytes)), out.RawBytes)
	p.Printf("Compression ratio:  %.2fx\n", out.CompressionRatio)
	p.Printf("Blobs:              %d data, %d tree\n", out.DataBlobs, out.TreeBlobs)
	return nil
}
