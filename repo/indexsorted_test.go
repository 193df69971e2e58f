package repo

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// indexFiles makes nFiles index files' blobs over packs: mostly new IDs,
// some listed again in another pack (a blob stored twice), some again in
// the same pack (the second layer of repair index), each file sorted.
func indexFiles(rng *rand.Rand, nFiles, perFile int, packs []ID) [][]IndexedBlob {
	var seen []IndexedBlob
	files := make([][]IndexedBlob, nFiles)
	for f := range files {
		for range perFile {
			var b IndexedBlob
			switch k := rng.IntN(10); {
			case k == 0 && len(seen) > 0:
				b = seen[rng.IntN(len(seen))]
				b.Pack = packs[rng.IntN(len(packs))]
				b.Offset = rng.Uint32N(1 << 20)
			case k == 1 && len(seen) > 0:
				b = seen[rng.IntN(len(seen))]
			default:
				b = IndexedBlob{PackedBlob: PackedBlob{ID: randomID(rng), Type: BlobType(1 + rng.IntN(3)), Compression: uint8(rng.IntN(2)),
					Offset: rng.Uint32(), Length: rng.Uint32N(1 << 24), RawLength: rng.Uint32()}, Pack: packs[rng.IntN(len(packs))]}
			}
			seen = append(seen, b)
			files[f] = append(files[f], b)
		}
		files[f] = sortedIndexFile(files[f]).Blobs
	}
	return files
}

func testPacks(rng *rand.Rand, n int) []ID {
	packs := make([]ID, n)
	for i := range packs {
		packs[i] = randomID(rng)
	}
	return packs
}

// mapIndex is an index filled the way every index was before the sorted
// arrays: Index.add, one file at a time, into the map.
func mapIndex(files [][]IndexedBlob) *Index {
	x := newIndex()
	for _, f := range files {
		x.add(f)
	}
	return x
}

// loadedIndex is an index filled as LoadIndex fills an empty one.
func loadedIndex(files [][]IndexedBlob, expected int) *Index {
	x := newIndex()
	load := x.startLoad(expected)
	for _, f := range files {
		load.addFile(f)
	}
	load.finish()
	return x
}

// indexState describes everything an index answers about ids and packs,
// so that two indexes can be compared.
func indexState(x *Index, ids, packs []ID) string {
	var b []byte
	places := func(label string, list []IndexedBlob) {
		b = append(b, label...)
		for _, p := range list {
			b = appendPlace(b, p)
		}
		b = append(b, '\n')
	}
	b = strconv.AppendInt(b, int64(x.Len()), 10)
	b = append(b, '\n')
	for _, id := range ids {
		l, ok := x.Lookup(id)
		if ok {
			places(id.Short()+" at", []IndexedBlob{l})
		} else {
			places(id.Short()+" missing", nil)
		}
		if ok != x.Has(id) {
			b = append(b, "Has disagrees\n"...)
		}
		places(" alternates", x.alternates(id))
	}
	for _, p := range packs {
		in, err := x.placesIn(p)
		if err != nil {
			b = append(b, err.Error()...)
		}
		slices.SortFunc(in, compareBlobs)
		places(fmt.Sprint("pack ", p.Short(), " ", x.HasPack(p)), in)
	}
	var each, all []IndexedBlob
	if err := x.Each(func(b IndexedBlob) { each = append(each, b) }); err != nil {
		b = append(b, err.Error()...)
	}
	if err := x.EachPlace(func(b IndexedBlob) { all = append(all, b) }); err != nil {
		b = append(b, err.Error()...)
	}
	slices.SortFunc(each, compareBlobs)
	slices.SortFunc(all, compareBlobs)
	places("each", each)
	places("each place", all)
	return string(b)
}

func appendPlace(b []byte, p IndexedBlob) []byte {
	b = append(b, ' ')
	b = append(b, p.ID.Short()...)
	b = append(b, '@')
	b = append(b, p.Pack.Short()...)
	for _, n := range []uint32{uint32(p.Type), uint32(p.Compression), p.Offset, p.Length, p.RawLength} {
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(n), 10)
	}
	return b
}

func compareBlobs(a, b IndexedBlob) int {
	if c := compareIDs(a.ID, b.ID); c != 0 {
		return c
	}
	return bytes.Compare(a.Pack[:], b.Pack[:])
}

func allIDs(files [][]IndexedBlob, rng *rand.Rand, absent int) []ID {
	var ids []ID
	for _, f := range files {
		for _, b := range f {
			ids = append(ids, b.ID)
		}
	}
	for range absent {
		ids = append(ids, randomID(rng))
	}
	return ids
}

func TestLoadedIndexAnswersAsTheMap(t *testing.T) {
	for _, tc := range []struct {
		name              string
		files, perFile    int
		expected, packs   int
		wantSortedBuckets int
	}{
		{"one bucket", 3, 50, 150, 4, 1},
		{"many buckets", 4, 150, 40000, 10, 4},
		{"expected far too low", 4, 150, 1, 8, 1},
		{"expected far too high", 4, 100, 1 << 20, 8, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.files)))
			packs := testPacks(rng, tc.packs)
			files := indexFiles(rng, tc.files, tc.perFile, packs)
			ids := allIDs(files, rng, 100)
			want := mapIndex(files)
			got := loadedIndex(files, tc.expected)
			if n := len(got.sorted.ids); n != tc.wantSortedBuckets {
				t.Errorf("%d buckets, want %d", n, tc.wantSortedBuckets)
			}
			if len(got.blobs) != 0 {
				t.Errorf("%d blobs in the map after a load, want 0", len(got.blobs))
			}
			if len(want.alts) == 0 {
				t.Fatal("the test data has no blob in two packs")
			}
			if w, g := indexState(want, ids, packs), indexState(got, ids, packs); w != g {
				t.Fatalf("loaded index differs from the map:\n%s", firstDiff(w, g))
			}
		})
	}
}

// TestLoadedIndexChangesAsTheMap runs what follows a load (a write
// session's blobs, a reserve, packs found lost or cut, a failed session
// forgotten) on both indexes and compares them after each step.
func TestLoadedIndexChangesAsTheMap(t *testing.T) {
	changesAsTheMap(t, func(files [][]IndexedBlob) *Index { return loadedIndex(files, 40000) }) // 4 buckets
}

// changesAsTheMap is TestLoadedIndexChangesAsTheMap for an index that
// load fills from files.
func changesAsTheMap(t *testing.T, load func(files [][]IndexedBlob) *Index) {
	rng := rand.New(rand.NewPCG(2, 2))
	packs := testPacks(rng, 12)
	files := indexFiles(rng, 4, 120, packs)
	want, got := mapIndex(files), load(files)
	newPacks := testPacks(rng, 3)
	allPacks := append(slices.Clone(packs), newPacks...)
	later := indexFiles(rng, 2, 60, newPacks)
	// Some blobs of the later session are stored again: already indexed.
	for i := range 20 {
		later[0][i].ID = files[i%len(files)][i].ID
	}
	ids := allIDs(append(slices.Clone(files), later...), rng, 100)
	compare := func(step string) {
		t.Helper()
		if w, g := indexState(want, ids, allPacks), indexState(got, ids, allPacks); w != g {
			t.Fatalf("after %s the loaded index differs from the map:\n%s", step, firstDiff(w, g))
		}
	}

	fresh := randomID(rng)
	for _, x := range []*Index{want, got} {
		if x.reserve(files[0][0].ID) {
			t.Fatal("reserve of an indexed blob reported true")
		}
		if !x.reserve(fresh) || x.reserve(fresh) {
			t.Fatal("reserve of a new blob: want true, then false while it is pending")
		}
		x.unreserve(fresh)
		if !x.reserve(fresh) {
			t.Fatal("reserve after unreserve reported false")
		}
		x.add(later[0])
		x.add(later[1])
		x.add([]IndexedBlob{{PackedBlob: PackedBlob{ID: fresh, Type: DataBlob, Length: 10}, Pack: newPacks[0]}})
		if x.reserve(fresh) {
			t.Fatal("reserve of a blob added after its reserve reported true")
		}
	}
	compare("adding two files")

	gone := map[ID]bool{packs[0]: true, packs[5]: true, newPacks[1]: true}
	w, errW := want.dropPacks(gone)
	g, errG := got.dropPacks(gone)
	if errW != nil || errG != nil {
		t.Fatalf("dropPacks: %v, %v", errW, errG)
	}
	if w != g || w == 0 {
		t.Fatalf("dropPacks left %d blobs without a place, the map %d (want the same, not 0)", g, w)
	}
	compare("dropping packs")

	sizes := map[ID]int64{}
	for _, p := range allPacks[2:] {
		sizes[p] = 1 << 40
	}
	if w, g := fmt.Sprint(want.damagedPacks(sizes)), fmt.Sprint(got.damagedPacks(sizes)); w != g {
		t.Fatalf("damagedPacks %s, the map %s", g, w)
	}

	failed := map[ID]bool{newPacks[0]: true}
	want.forget(later[0], failed)
	got.forget(later[0], failed)
	compare("forgetting a failed session")

	// A blob whose only place was dropped is stored again.
	for _, x := range []*Index{want, got} {
		x.add(files[0][:10])
	}
	compare("storing dropped blobs again")

	got.reset()
	if got.Len() != 0 || got.Has(files[1][0].ID) {
		t.Fatal("reset left blobs indexed")
	}
}

// TestIndexLoadConcurrent adds files from several goroutines, as LoadIndex
// does, and reads the index from several after (for -race): whatever the
// order, every blob is found and no blob is listed twice.
func TestIndexLoadConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	packs := testPacks(rng, 16)
	files := indexFiles(rng, 16, 200, packs)
	x := newIndex()
	load := x.startLoad(40000)
	var wg sync.WaitGroup
	for _, f := range files {
		wg.Go(func() { load.addFile(f) })
	}
	wg.Wait()
	load.finish()
	if again := x.startLoad(10); again != nil {
		t.Fatal("startLoad on a loaded index did not refuse")
	}
	want := mapIndex(files)
	for _, f := range files {
		wg.Go(func() {
			for _, b := range f {
				if _, ok := x.Lookup(b.ID); !ok {
					t.Errorf("blob %s not found", b.ID.Short())
					return
				}
			}
		})
	}
	wg.Wait()
	if x.Len() != want.Len() {
		t.Fatalf("%d blobs indexed, want %d", x.Len(), want.Len())
	}
}

func TestSortedEntryPacking(t *testing.T) {
	e := indexEntry{pack: maxSortedPack, offset: 1, length: 2, rawLength: 3, typ: InventoryBlob, comp: compressZstd}
	s, ok := packSorted(e)
	if !ok || s.unpack() != e {
		t.Fatalf("packSorted(%+v) = %+v, %v; unpacks to %+v", e, s, ok, s.unpack())
	}
	if s.packMeta == droppedEntry {
		t.Fatal("the highest pack number packs to the dropped mark")
	}
	for _, bad := range []indexEntry{{pack: maxSortedPack + 1}, {typ: 4}, {comp: 4}} {
		if _, ok := packSorted(bad); ok {
			t.Errorf("packSorted(%+v) accepted what it cannot hold", bad)
		}
	}
}

func firstDiff(a, b string) string {
	al, bl := bytes.Split([]byte(a), []byte("\n")), bytes.Split([]byte(b), []byte("\n"))
	for i := range min(len(al), len(bl)) {
		if !bytes.Equal(al[i], bl[i]) {
			return fmt.Sprintf("line %d\nmap:    %.300s\nsorted: %.300s", i, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(al), len(bl))
}
