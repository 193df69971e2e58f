package repo

import (
	"encoding/binary"
	"testing"
)

// BenchmarkLostPackScan is what finding lost packs adds to every backup
// (WriteOptions.AdoptPacks) on an index of a million blobs in 4,000 packs,
// none lost: one pass over the packs against the listing the backup makes
// anyway (the end of each pack's last blob is kept as blobs are indexed).
func BenchmarkLostPackScan(b *testing.B) {
	const blobs, packs = 1 << 20, 4000
	x := newIndex()
	sizes := map[ID]int64{}
	entries := make([]IndexedBlob, 0, blobs)
	for i := range blobs {
		var id, pack ID
		binary.LittleEndian.PutUint64(id[:], uint64(i)*0x9E3779B97F4A7C15)
		binary.LittleEndian.PutUint64(pack[:], uint64(i%packs)+1)
		off := uint32(i/packs) * 4096
		entries = append(entries, IndexedBlob{PackedBlob: PackedBlob{ID: id, Type: DataBlob, Offset: off, Length: 4096, RawLength: 4000}, Pack: pack})
		sizes[pack] = max(sizes[pack], int64(off)+4096+1024)
	}
	x.add(entries)
	b.ResetTimer()
	for b.Loop() {
		lost := x.damagedPacks(sizes)
		if n, err := x.dropPacks(lost); len(lost) != 0 || n != 0 || err != nil {
			b.Fatalf("%d packs lost in a sound index", len(lost))
		}
	}
}
