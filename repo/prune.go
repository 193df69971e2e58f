package repo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidManifest stops a prune: a remaining snapshot, or a tree one
// references, cannot be read or decoded. What it uses is then unknown, so
// no data may be judged garbage, and prune writes and deletes nothing. It is
// wrapped with the snapshot's ID; where a tree failed, errors.As finds the
// *SnapshotTreeError too.
var ErrInvalidManifest = errors.New("invalid_manifest: a snapshot or a tree it references cannot be read")

// DefaultLeftoverAge is how old a pack must be before prune deletes or
// repacks it: older than any backup could still be writing it or about to
// save the snapshot that uses it.
const DefaultLeftoverAge = 2 * time.Hour

// DefaultMaxUnused is restic's default for --max-unused: 10% of the
// repository's pack bytes after prune may be unused.
var DefaultMaxUnused = UnusedLimit{Fraction: 0.10}

// UnusedLimit says how much unused data may stay in packs after a prune:
// a share of the pack bytes after prune (Fraction, in [0, 1)), an absolute
// number of bytes (Bytes), or any amount (Unlimited: only wholly unused
// packs go). The zero value allows none: every partly used pack is
// repacked.
type UnusedLimit struct {
	Fraction  float64
	Bytes     int64
	Unlimited bool
}

// String gives the limit in the form ParseUnusedLimit reads.
func (l UnusedLimit) String() string {
	switch {
	case l.Unlimited:
		return "unlimited"
	case l.Fraction > 0:
		return strconv.FormatFloat(l.Fraction*100, 'f', -1, 64) + "%"
	}
	return strconv.FormatInt(l.Bytes, 10)
}

// ParseUnusedLimit reads a --max-unused value: a percentage ("10%"), a
// size in bytes with an optional unit ("500M", "5G", "1T", "0") or
// "unlimited".
func ParseUnusedLimit(s string) (UnusedLimit, error) {
	bad := func() (UnusedLimit, error) {
		return UnusedLimit{}, fmt.Errorf("max-unused %q: want a percentage below 100 (10%%), a size (500M, 5G, 0) or unlimited", s)
	}
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return bad()
	case strings.EqualFold(t, "unlimited"):
		return UnusedLimit{Unlimited: true}, nil
	case strings.HasSuffix(t, "%"):
		p, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
		if err != nil || p < 0 || p >= 100 || math.IsNaN(p) {
			return bad()
		}
		return UnusedLimit{Fraction: p / 100}, nil
	}
	n, err := parseSize(t)
	if err != nil {
		return bad()
	}
	return UnusedLimit{Bytes: n}, nil
}

// parseSize reads a number of bytes with an optional unit: K, M, G or T
// (powers of 1024, an optional trailing B or iB).
func parseSize(s string) (int64, error) {
	upper := strings.ToUpper(s)
	upper = strings.TrimSuffix(strings.TrimSuffix(upper, "IB"), "B")
	mult := int64(1)
	if upper != "" {
		switch upper[len(upper)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			upper = upper[:len(upper)-1]
		}
	}
	n, err := strconv.ParseInt(upper, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

// maxUnused returns the unused bytes the limit allows beside used bytes
// of used data: a Fraction f of the pack bytes after prune is
// used*f/(1-f), restic's reading.
func (l UnusedLimit) maxUnused(used int64) int64 {
	switch {
	case l.Unlimited:
		return math.MaxInt64
	case l.Fraction > 0:
		if l.Fraction >= 1 {
			return math.MaxInt64
		}
		return int64(float64(used) * l.Fraction / (1 - l.Fraction))
	}
	return l.Bytes
}

// PruneOptions say how much prune does.
type PruneOptions struct {
	// MaxUnused is how much unused data may stay in packs (restic's
	// --max-unused); the zero value allows none. DefaultMaxUnused is
	// restic's default.
	MaxUnused UnusedLimit
	// MaxRepackSize bounds the bytes of packs repacked in one run; 0 is no
	// limit.
	MaxRepackSize int64
	// DryRun plans and reports, like PreviewForget: no lock, nothing
	// written or deleted. Its figures are the real run's, except what is
	// written (Written*).
	DryRun bool
	// LeftoverAge is how old a pack must be before it is deleted or
	// repacked, indexed or not, and a temporary file before it is removed:
	// a live backup's packs are younger, and unused until its snapshot is
	// saved. 0 is DefaultLeftoverAge.
	LeftoverAge time.Duration
	// TempDir is the folder of the sorted runs; "" is os.TempDir(). It
	// needs about 200 bytes per indexed blob at the peak (the index
	// entries, the used IDs and the used blobs by pack, sorted on disk):
	// some 2 GB for 10 million blobs. On a RAM-backed folder (tmpfs) that
	// is memory.
	TempDir string
	// Progress, when set, is called as prune moves on (see PruneProgress).
	Progress func(PruneProgress)
}

// PruneProgress is where a prune is: its phase ("forget", "snapshots",
// "index", "walk", "plan", "repack", "rewrite-index", "delete") and, where
// it counts, how many of its items are done out of a total (0: not known).
type PruneProgress struct {
	Phase string
	Done  int64
	Total int64
}

// PruneResult is what a prune did (or, for a dry run, would do). Packs are
// counted as files and bytes as their sizes; blob bytes are sealed blob
// lengths.
type PruneResult struct {
	ForgetsCompleted []string `json:"forgets_completed"` // snapshots of an interrupted forget, removed first
	Snapshots        int      `json:"snapshots"`         // snapshots kept, whose data stays

	BlobsUsed   int64 `json:"blobs_used"`   // indexed blobs the snapshots use (one copy each)
	BytesUsed   int64 `json:"bytes_used"`   // their bytes
	BlobsUnused int64 `json:"blobs_unused"` // indexed blobs (and extra copies) nothing uses
	BytesUnused int64 `json:"bytes_unused"` // their bytes

	PacksDeleted  int   `json:"packs_deleted"`  // packs wholly unused, deleted
	BytesDeleted  int64 `json:"bytes_deleted"`  // their sizes
	PacksRepacked int   `json:"packs_repacked"` // packs partly unused, read, their used blobs rewritten, deleted
	BytesRepacked int64 `json:"bytes_repacked"` // their sizes
	BlobsCopied   int64 `json:"blobs_copied"`   // used blobs copied out of repacked packs
	BytesCopied   int64 `json:"bytes_copied"`   // their bytes as read
	PacksMissing  int   `json:"packs_missing"`  // wholly unused packs an index lists that were already gone

	PacksKeptYoung int   `json:"packs_kept_young"` // indexed packs to delete or repack, but younger than the leftover age (or of unknown age): kept, counted in packs_left too
	BytesKeptYoung int64 `json:"bytes_kept_young"` // their sizes

	LeftoversDeleted     int   `json:"leftovers_deleted"`      // packs no index listed, old enough: deleted
	LeftoverBytesDeleted int64 `json:"leftover_bytes_deleted"` // their sizes
	LeftoversKept        int   `json:"leftovers_kept"`         // packs no index listed, too young (or of unknown age): kept
	LeftoverBytesKept    int64 `json:"leftover_bytes_kept"`    // their sizes
	TempFilesDeleted     int   `json:"temp_files_deleted"`     // temporary files of killed writes, whose writer is provably gone or old enough: deleted
	TempBytesDeleted     int64 `json:"temp_bytes_deleted"`     // their sizes
	TempFilesKept        int   `json:"temp_files_kept"`        // temporary files of live writers, or too young: kept
	TempFilesForeign     int   `json:"temp_files_foreign"`     // files in the temporary folder with names nightjar never gives: left alone

	BytesFreed         int64 `json:"bytes_freed"`          // sizes of all packs deleted (wholly unused, repacked, leftovers)
	UnusedLeft         int64 `json:"unused_left"`          // unused bytes that stay in packs kept
	PacksLeft          int   `json:"packs_left"`           // indexed packs kept (without those written)
	BytesLeft          int64 `json:"bytes_left"`           // their sizes
	IndexFiles         int   `json:"index_files"`          // index files read
	IndexFilesReplaced int   `json:"index_files_replaced"` // index files removed, their entries for packs that stay written anew

	PacksWritten int   `json:"packs_written"` // new packs of repacked blobs (0 in a dry run)
	BytesWritten int64 `json:"bytes_written"` // bytes of new packs and index files (0 in a dry run)
}
