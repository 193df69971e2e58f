package repo

// Fuzz targets for every decoder of repository data. Each runs its seed
// corpus as a normal test; `go test -fuzz=FuzzX ./repo` explores further.
// Every decoder must reject bad input with an error (of the documented
// class), never panic, and accept only what its encoder could have written.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// isClass reports whether err wraps ErrIntegrity or ErrUnsupportedVersion,
// the two ways a reader rejects an object.
func isClass(err error) bool {
	return errors.Is(err, ErrIntegrity) || errors.Is(err, ErrUnsupportedVersion)
}

func seedID(b byte) ID {
	var id ID
	for i := range id {
		id[i] = b + byte(i)
	}
	return id
}

func FuzzDecodeIndexBody(f *testing.F) {
	p1, p2 := seedID(1), seedID(100)
	blobs := []IndexedBlob{
		{PackedBlob: PackedBlob{ID: seedID(50), Type: DataBlob, Compression: compressZstd, Offset: 0, Length: 100, RawLength: 300}, Pack: p1},
		{PackedBlob: PackedBlob{ID: seedID(20), Type: TreeBlob, Offset: 100, Length: 60, RawLength: 20}, Pack: p1},
		{PackedBlob: PackedBlob{ID: seedID(90), Type: InventoryBlob, Offset: 0, Length: 72, RawLength: 32}, Pack: p2},
	}
	valid := encodeIndexBody(sortedIndexFile(append([]IndexedBlob(nil), blobs...)))
	f.Add(valid)
	f.Add(encodeIndexBody(indexFile{}))
	f.Add(encodeIndexBody(sortedIndexFile(blobs[:1])))
	f.Add(encodeIndexBody(indexFile{Packs: []ID{p1}, Supersedes: []ID{seedID(7), seedID(8)}}))
	f.Add(valid[:len(valid)-1])
	f.Add(valid[:40])
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	unsorted := encodeIndexBody(indexFile{Packs: []ID{p1}, Blobs: []IndexedBlob{blobs[0], blobs[1]}})
	f.Add(unsorted)
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeIndexBody(body)
		if err != nil {
			if !errors.Is(err, ErrIntegrity) {
				t.Fatalf("rejection without ErrIntegrity: %v", err)
			}
			return
		}
		packs := map[ID]bool{}
		for _, p := range got.Packs {
			packs[p] = true
		}
		for i, b := range got.Blobs {
			if i > 0 && bytes.Compare(got.Blobs[i-1].ID[:], b.ID[:]) >= 0 {
				t.Fatalf("accepted blobs out of order at %d", i)
			}
			if !b.Type.valid() || b.Compression > compressZstd || !packs[b.Pack] {
				t.Fatalf("accepted bad entry %+v", b)
			}
		}
		again, err := decodeIndexBody(encodeIndexBody(got))
		if err != nil {
			t.Fatalf("re-encoded index does not decode: %v", err)
		}
		if len(again.Blobs) != len(got.Blobs) {
			t.Fatalf("re-encoded index has %d blobs, want %d", len(again.Blobs), len(got.Blobs))
		}
		for i := range got.Blobs {
			if again.Blobs[i] != got.Blobs[i] {
				t.Fatalf("blob %d re-decodes as %+v, want %+v", i, again.Blobs[i], got.Blobs[i])
			}
		}
	})
}

func FuzzDecodePackHeader(f *testing.F) {
	s := plainSealer{}
	ov := uint32(s.overhead())
	blobs := []PackedBlob{
		{ID: seedID(1), Type: DataBlob, Compression: compressZstd, Length: 100 + ov, RawLength: 400},
		{ID: seedID(2), Type: TreeBlob, Length: 10 + ov, RawLength: 10},
		{ID: seedID(3), Type: InventoryBlob, Length: 64 + ov, RawLength: 64},
	}
	end := int64(0)
	for _, b := range blobs {
		end += int64(b.Length)
	}
	f.Add(encodePackHeader(blobs), end)
	f.Add(encodePackHeader(blobs[:1]), int64(blobs[0].Length))
	f.Add(encodePackHeader(nil), int64(0))
	f.Add(encodePackHeader(blobs), end+1)
	f.Add(encodePackHeader(blobs)[:50], end)
	f.Add([]byte{1, 0, 0, 0}, int64(0))
	f.Add([]byte{}, int64(-1))
	f.Fuzz(func(t *testing.T, plain []byte, headerOffset int64) {
		// The input is the header's plaintext, sealed here so that the
		// fuzzer reaches the parser; and the same bytes as a sealed header.
		for _, sealed := range [][]byte{s.seal(nil, plain, packHeaderAD), plain} {
			got, err := decodePackHeader(s, sealed, headerOffset)
			if err != nil {
				if !errors.Is(err, ErrIntegrity) {
					t.Fatalf("rejection without ErrIntegrity: %v", err)
				}
				continue
			}
			var offset int64
			for _, b := range got {
				if !b.Type.valid() || b.Compression > compressZstd || b.Length < ov || int64(b.Offset) != offset {
					t.Fatalf("accepted bad entry %+v at offset %d", b, offset)
				}
				offset += int64(b.Length)
			}
			if offset != headerOffset {
				t.Fatalf("blobs end at %d, header at %d", offset, headerOffset)
			}
			if !bytes.Equal(encodePackHeader(got), s.mustOpen(t, sealed)) {
				t.Fatal("accepted header does not re-encode to itself")
			}
		}
	})
}

// mustOpen opens a plainSealer-sealed pack header.
func (s plainSealer) mustOpen(t *testing.T, sealed []byte) []byte {
	plain, err := s.open(nil, sealed, packHeaderAD)
	if err != nil {
		t.Fatal(err)
	}
	return plain
}

func FuzzParsePackTrailer(f *testing.F) {
	trailer := func(n uint32, magic string, version byte) []byte {
		b := binary.LittleEndian.AppendUint32(nil, n)
		return append(append(b, magic...), version)
	}
	f.Add(trailer(100, "NJP", packVersion), int64(1000))
	f.Add(trailer(992, "NJP", packVersion), int64(1000))
	f.Add(trailer(993, "NJP", packVersion), int64(1000))
	f.Add(trailer(3, "NJP", packVersion), int64(1000))
	f.Add(trailer(100, "NJP", packVersion+1), int64(1000))
	f.Add(trailer(100, "XJP", packVersion), int64(1000))
	f.Add(trailer(0xffffffff, "NJP", packVersion), int64(8))
	f.Add([]byte("NJP"), int64(3))
	f.Fuzz(func(t *testing.T, tr []byte, size int64) {
		n, err := parsePackTrailer(tr, size)
		if err != nil {
			if !isClass(err) {
				t.Fatalf("rejection without a class: %v", err)
			}
			return
		}
		if len(tr) != packTrailerSize || string(tr[4:7]) != "NJP" || tr[7] != packVersion {
			t.Fatalf("accepted trailer %x", tr)
		}
		if n < 4 || n > size-packTrailerSize {
			t.Fatalf("header length %d out of range for a pack of %d bytes", n, size)
		}
	})
}

func FuzzSplitHeader(f *testing.F) {
	for _, kind := range []string{"config", "key", "index", "snapshot", "lock"} {
		f.Add(kind, append(headerLine(kind), "body"...))
	}
	f.Add("config", append(headerLine("config", EncryptionXChaCha), 1, 2, 3))
	f.Add("index", []byte("nightjar index 2\nbody"))
	f.Add("index", []byte("nightjar index 0\nbody"))
	f.Add("index", []byte("nightjar index -1\n"))
	f.Add("index", []byte("nightjar index 99999999999999999999\n"))
	f.Add("index", []byte("nightjar snapshot 1\n"))
	f.Add("index", []byte("nightjar index 1"))
	f.Add("index", append(bytes.Repeat([]byte(" "), 300), '\n'))
	f.Add("", []byte("nightjar  1\n"))
	f.Fuzz(func(t *testing.T, kind string, data []byte) {
		extra, header, body, err := splitHeader(kind, data)
		if err != nil {
			if !isClass(err) {
				t.Fatalf("rejection without a class: %v", err)
			}
			return
		}
		if !bytes.Equal(append(append([]byte(nil), header...), body...), data) {
			t.Fatal("header and body are not the object")
		}
		if len(header) == 0 || header[len(header)-1] != '\n' || bytes.IndexByte(header, '\n') != len(header)-1 {
			t.Fatalf("header %q is not one line", header)
		}
		fields := bytes.Fields(header)
		if len(fields) != 3+len(extra) || string(fields[0]) != "nightjar" || string(fields[1]) != kind {
			t.Fatalf("accepted header %q for kind %q", header, kind)
		}
	})
}

func FuzzDecodeKeyInfo(f *testing.F) {
	kdf := KDFParams{Algorithm: "argon2id", Time: 1, MemoryKiB: 64, Threads: 1, Salt: bytes.Repeat([]byte{7}, 16)}
	mk := &MasterKey{Encrypt: make([]byte, 32), BlobID: make([]byte, 32), Chunker: make([]byte, 32)}
	info := KeyInfo{Created: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Hostname: "h", Username: "u", KDF: kdf}
	valid, err := encodeKeyFile("0123456789abcdef", info, []byte("pw"), mk)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("0123456789abcdef", valid)
	f.Add("0123456789abcdef", valid[:len(headerLine("key"))+10])
	f.Add("k", []byte("nightjar key 1\n{}\n"))
	f.Add("k", []byte("nightjar key 1\n{\"kdf\":{\"algorithm\":\"argon2id\",\"time\":1,\"memory_kib\":4294967295,\"threads\":1,\"salt\":\"AAAAAAAAAAAAAAAAAAAAAA==\"}}\nbody"))
	f.Add("k", []byte("nightjar key 1\nnot json\n"))
	f.Add("k", []byte("nightjar key 2\n{}\n"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		info, prefix, body, err := decodeKeyInfo(name, data)
		if err != nil {
			if !isClass(err) {
				t.Fatalf("rejection without a class: %v", err)
			}
			return
		}
		if info.Name != name {
			t.Fatalf("name %q, want %q", info.Name, name)
		}
		if err := info.KDF.check(); err != nil {
			t.Fatalf("accepted KDF parameters that fail check: %v", err)
		}
		if !bytes.Equal(append(append([]byte(nil), prefix...), body...), data) {
			t.Fatal("prefix and body are not the key file")
		}
		// Unwrapping is safe to try when the parameters are small: it gives
		// a whole master key or a classified error.
		if info.KDF.MemoryKiB <= 1024 && info.KDF.Time <= 2 {
			mk, _, err := openKeyFile(name, data, []byte("pw"))
			switch {
			case err == nil && !mk.valid():
				t.Fatal("opened a key file with a malformed master key")
			case err != nil && !errors.Is(err, ErrWrongPassword) && !isClass(err):
				t.Fatalf("unwrapping fails without a class: %v", err)
			}
		}
	})
}

func FuzzDecodeConfig(f *testing.F) {
	s := plainSealer{}
	cfg := Config{
		Version: ConfigVersion, ID: string(bytes.Repeat([]byte("ab"), 32)), Created: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		Compression: "zstd", Chunker: ChunkerParams{Min: 64 << 10, Avg: 256 << 10, Max: 1 << 20}, PackSize: DefaultPackSize,
		InsecureKey: &MasterKey{BlobID: make([]byte, 32), Chunker: make([]byte, 32)},
	}
	plain, err := json.Marshal(cfg)
	if err != nil {
		f.Fatal(err)
	}
	valid, err := encodeConfig(s, EncryptionNone, cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid, plain)
	f.Add(valid[:len(valid)-1], []byte(`{}`))
	f.Add([]byte("nightjar config 2 none\n"), []byte(`{"version":2}`))
	f.Add([]byte("nightjar config 1 rot13\n"), []byte(`{"version":1,"id":"00","compression":"zstd"}`))
	f.Add([]byte{}, []byte(`{"version":1,"id":"`+cfg.ID+`","compression":"zstd","chunker":{"min":0,"avg":0,"max":0},"pack_size":1}`))
	f.Add([]byte{}, []byte(`{"version":-1,"id":"`+cfg.ID+`","compression":"zstd","chunker":{"min":65536,"avg":262144,"max":1048576},"pack_size":16777216}`))
	f.Add([]byte{}, []byte(`null`))
	f.Fuzz(func(t *testing.T, raw, plain []byte) {
		header := headerLine("config", EncryptionNone)
		sealed := s.seal(append([]byte(nil), header...), plain, associatedData(header, "config"))
		for _, data := range [][]byte{raw, sealed} {
			if _, err := configEncryption(data); err != nil && !isClass(err) {
				t.Fatalf("configEncryption rejection without a class: %v", err)
			}
			c, err := decodeConfig(s, data)
			if err != nil {
				if !isClass(err) {
					t.Fatalf("rejection without a class: %v", err)
				}
				continue
			}
			if err := c.check(); err != nil || c.Version > ConfigVersion {
				t.Fatalf("accepted a config that fails its own check (version %d): %v", c.Version, err)
			}
			again, err := encodeConfig(s, EncryptionNone, c)
			if err != nil {
				t.Fatal(err)
			}
			c2, err := decodeConfig(s, again)
			if err != nil {
				t.Fatalf("re-encoded config does not decode: %v", err)
			}
			j1, _ := json.Marshal(c)
			j2, _ := json.Marshal(c2)
			if !bytes.Equal(j1, j2) {
				t.Fatalf("config changes in a round trip:\n%s\n%s", j1, j2)
			}
		}
	})
}

func FuzzTreeJSON(f *testing.F) {
	f.Add("file.txt", "", []byte(`{"name":"a","type":"file","mode":420,"uid":0,"gid":0,"mtime":"2024-01-01T00:00:00Z","ctime":"0001-01-01T00:00:00Z"}`))
	f.Add("caf\xe9", "/tmp/\xff", []byte(`{"name_raw":"/w==","type":"symlink","link_target_raw":"L3RtcC//","mtime":"2024-01-01T00:00:00.123456789+02:00","ctime":"0001-01-01T00:00:00Z"}`))
	f.Add("\xed\xa0\x80", "\ufffd", []byte(`{"name":"x","name_raw":"eQ==","type":"dir","subtree":"`+seedID(1).String()+`"}`))
	f.Add("", "", []byte(`{"content":[],"xattrs":[{"name":"user.a","value":"AAE="}]}`))
	f.Add("a", "b", []byte(`null`))
	f.Add("a", "b", []byte(`{"name_raw":"!!"}`))
	f.Fuzz(func(t *testing.T, name, target string, js []byte) {
		n := Node{Name: name, Type: NodeSymlink, LinkTarget: target, MTime: time.Unix(1700000000, 5).UTC()}
		b, err := encodeTree(&Tree{Nodes: []Node{n}})
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		back, err := decodeTreeOnly(b)
		if err != nil {
			t.Fatalf("decode of an encoded tree %s: %v", b, err)
		}
		if len(back.Nodes) != 1 || back.Nodes[0].Name != name || back.Nodes[0].LinkTarget != target {
			t.Fatalf("name %q target %q come back as %+v", name, target, back.Nodes)
		}

		// Any JSON node: decoding must not panic, and what decodes
		// re-encodes stably.
		m, err := decodeTreeOnly(append(append([]byte(`{"nodes":[`), js...), ']', '}'))
		if err != nil {
			return
		}
		b1, err := encodeTree(m)
		if err != nil {
			return // e.g. a time outside what JSON times can hold
		}
		m2, err := decodeTreeOnly(b1)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b1, err)
		}
		for i := range m.Nodes {
			if m2.Nodes[i].Name != m.Nodes[i].Name || m2.Nodes[i].LinkTarget != m.Nodes[i].LinkTarget {
				t.Fatalf("names change on re-encoding: %q %q -> %q %q", m.Nodes[i].Name, m.Nodes[i].LinkTarget, m2.Nodes[i].Name, m2.Nodes[i].LinkTarget)
			}
		}
		b2, err := encodeTree(m2)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not stable:\n%s\n%s (%v)", b1, b2, err)
		}
	})
}
