package repo

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
)

// benchID is generated blob i: its first 8 bytes scramble i (an odd
// multiplier is a bijection), so that IDs come in no order, and bytes
// 8-16 hold i, so that benchLookup finds the blob without a map.
func benchID(i uint64) ID {
	var id ID
	binary.BigEndian.PutUint64(id[:8], i*0x9e3779b97f4a7c15)
	binary.BigEndian.PutUint64(id[8:16], i)
	return id
}

// benchEntry is blob i's index entry: it lies in pack i/1000.
func benchEntry(i uint64) IndexedBlob {
	var pack ID
	binary.BigEndian.PutUint64(pack[:], i/1000)
	return IndexedBlob{PackedBlob: PackedBlob{ID: benchID(i), Type: DataBlob, Offset: uint32(i%1000) << 10, Length: 1 << 10}, Pack: pack}
}

// BenchmarkBlobUsageStream runs the part of BlobUsage that grows with the
// number of blobs, on generated IDs instead of a repository's: the used
// blobs (n distinct, one in seven referenced twice, as shared blobs are)
// and the index entries (n used and n/10 unused blobs, in no order, as
// index files come) go through the same sorters, and the sorted streams
// through the same join. Its memory must not grow with n: see
// bench/usedblobs/run.sh for the peak RSS of the 1M and 10M cases.
func BenchmarkBlobUsageStream(b *testing.B) {
	for _, n := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("%dM", n/1_000_000), func(b *testing.B) {
			total := uint64(n + n/10)
			isUsed := func(i uint64) bool { return i%11 != 10 }
			for b.Loop() {
				u := &usage{opts: UsageOptions{TempDir: b.TempDir()}}
				used := u.sorter()
				wantUsed := 0
				for i := range total {
					if !isUsed(i) {
						continue
					}
					wantUsed++
					refs := 1
					if i%7 == 0 {
						refs = 2
					}
					for range refs {
						if err := used.Add(benchID(i)); err != nil {
							b.Fatal(err)
						}
					}
				}
				indexed := u.recordSorter(blobRecordSize)
				rec := make([]byte, blobRecordSize)
				for i := range total {
					if err := indexed.AddRecord(byBlobRecord(rec, benchEntry(i))); err != nil {
						b.Fatal(err)
					}
				}
				usedIDs, err := used.Sorted()
				if err != nil {
					b.Fatal(err)
				}
				indexedIDs, err := indexed.Sorted()
				if err != nil {
					b.Fatal(err)
				}
				gotUsed, gotAll := 0, 0
				err = joinUsage(context.Background(), usedIDs, indexedIDs, func(bu BlobUse) error {
					gotAll++
					if bu.Used {
						gotUsed++
					}
					if i := binary.BigEndian.Uint64(bu.ID[8:16]); bu.Used != isUsed(i) || bu.IndexedBlob != benchEntry(i) {
						return fmt.Errorf("blob %d: used %v at %+v", i, bu.Used, bu.IndexedBlob)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if gotUsed != wantUsed || uint64(gotAll) != total {
					b.Fatalf("%d of %d blobs used, want %d of %d", gotUsed, gotAll, wantUsed, total)
				}
				if err := u.close(); err != nil {
					b.Fatal(err)
				}
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MiB")
			b.ReportMetric(float64(n), "used-blobs")
		})
	}
}
