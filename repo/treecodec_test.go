package repo

// Tests of the hand-written tree codec against its oracle, encoding/json:
// the encoder must write json.Marshal's bytes, and the decoder must either
// give json.Unmarshal's result or decline.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// benchTree is a realistic directory: mostly files of one owner with one
// to three chunks, a few subdirectories and symlinks, times with
// nanoseconds.
func benchTree() *Tree {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	exts := []string{".go", ".txt", ".jpg", ".pdf", "_test.go", ".tar.gz"}
	var t Tree
	for i := range 100 {
		mtime := base.Add(time.Duration(rng.Int64N(int64(400 * 24 * time.Hour))))
		n := Node{
			Name: fmt.Sprintf("file-%03d-%x%s", i, rng.Uint32(), exts[i%len(exts)]),
			Type: NodeFile, Mode: 0o644, UID: 1000, GID: 1000, User: "alice", Group: "staff",
			Size: uint64(rng.IntN(3 << 20)), MTime: mtime, CTime: mtime.Add(time.Duration(rng.IntN(1e9))),
			Inode: uint64(1_000_000 + i), Device: 2049, Links: 1,
		}
		switch {
		case i%20 == 0:
			n.Type, n.Mode, n.Size, n.Links = NodeDir, 0o755, 0, 2
			id := randomID(rng)
			n.Subtree = &id
		case i%33 == 0:
			n.Type, n.Mode, n.Size, n.LinkTarget = NodeSymlink, 0o777, 0, "../shared/"+n.Name
		default:
			for range 1 + rng.IntN(3) {
				n.Content = append(n.Content, randomID(rng))
			}
		}
		t.Nodes = append(t.Nodes, n)
	}
	return &t
}

func randomID(rng *rand.Rand) ID {
	var id ID
	for i := range id {
		id[i] = byte(rng.Uint32())
	}
	return id
}

// unmarshalTree is decodeTree by encoding/json alone.
// decodeTreeOnly is decodeTree for a tree blob that is not a tree list.
func decodeTreeOnly(data []byte) (*Tree, error) {
	t, _, err := decodeTree(data)
	return t, err
}

func unmarshalTree(data []byte) (*Tree, error) {
	var tj treeJSON
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, err
	}
	return tj.tree(), nil
}

// checkEncoder checks appendTree and encodeTree against json.Marshal, and
// that parseTree decodes what appendTree writes as json.Unmarshal does.
func checkEncoder(t *testing.T, tree *Tree) {
	t.Helper()
	want, wantErr := marshalTree(tree)
	fast, ok := appendTree(nil, tree)
	if ok != (wantErr == nil) {
		t.Fatalf("appendTree ok %v, json.Marshal error %v", ok, wantErr)
	}
	if ok && !bytes.Equal(fast, want) {
		t.Fatalf("appendTree writes\n%s\njson.Marshal\n%s", fast, want)
	}
	got, err := encodeTree(tree)
	if !bytes.Equal(got, want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("encodeTree gives %s, %v; json.Marshal %s, %v", got, err, want, wantErr)
	}
	if !ok {
		return
	}
	tj, ok := parseTree(fast)
	if !ok {
		t.Fatalf("parseTree declines what appendTree writes:\n%s", fast)
	}
	var wantTJ treeJSON
	if err := json.Unmarshal(fast, &wantTJ); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tj, wantTJ) {
		t.Fatalf("parseTree of\n%s\ngives %+v\njson.Unmarshal %+v", fast, tj, wantTJ)
	}
}

// checkDecoder checks parseTree and decodeTree against json.Unmarshal. It
// reports whether parseTree accepted data.
func checkDecoder(t *testing.T, data []byte) bool {
	t.Helper()
	var want treeJSON
	wantErr := json.Unmarshal(data, &want)
	fast, ok := parseTree(data)
	if ok {
		if wantErr != nil {
			t.Fatalf("parseTree accepts %q, json.Unmarshal fails: %v", data, wantErr)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("parseTree of %q gives\n%+v\njson.Unmarshal\n%+v", data, fast, want)
		}
	} else if !reflect.DeepEqual(fast, treeJSON{}) {
		t.Fatalf("parseTree declines %q but returns %+v", data, fast)
	}
	got, parts, err := decodeTree(data)
	if wantErr == nil && want.Parts != nil {
		// A tree list: its parts, or an error when it has none or
		// entries of its own.
		wantParts, listErr := want.list()
		if fmt.Sprint(err) != fmt.Sprint(listErr) || !reflect.DeepEqual(parts, wantParts) || got != nil {
			t.Fatalf("decodeTree of the tree list %q gives %v, %v, %v; want parts %v, error %v", data, got, parts, err, wantParts, listErr)
		}
		return ok
	}
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("decodeTree of %q fails with %v, json.Unmarshal with %v", data, err, wantErr)
	}
	if parts != nil {
		t.Fatalf("decodeTree of %q gives parts %v", data, parts)
	}
	if err == nil && !reflect.DeepEqual(got, want.tree()) {
		t.Fatalf("decodeTree of %q gives\n%+v\nwant\n%+v", data, got, want.tree())
	}
	return ok
}

func TestTreeCodecRealistic(t *testing.T) {
	tree := benchTree()
	checkEncoder(t, tree)
	data, err := encodeTree(tree)
	if err != nil {
		t.Fatal(err)
	}
	if !checkDecoder(t, data) {
		t.Fatal("parseTree declines a realistic tree")
	}
	checkEncoder(t, &Tree{})
	checkEncoder(t, &Tree{Nodes: []Node{}})
}

// The bytes json.Marshal writes for the odd cases, spelled out, so that a
// change of encoding/json that the fuzz oracle would follow shows here.
func TestAppendTreeEscapes(t *testing.T) {
	id := seedID(1)
	n := Node{
		Name: "a<b>&\"\\\x01\x7f\u2028\u2029\t\xff", Type: "fifo", Group: "\xc3",
		MTime: time.Date(2024, 1, 2, 3, 4, 5, 600, time.FixedZone("x", -(5*3600+30*60))),
		CTime: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), Subtree: &id, Content: []ID{},
		Xattrs: []Xattr{{Name: "user.<x>", Value: nil}, {Value: []byte{}}, {Value: []byte{0, 1, 0xff}}},
	}
	// Valid UTF-8 except for the last byte: the name goes to name_raw.
	n.LinkTarget = n.Name[:len(n.Name)-1]
	got, ok := appendTree(nil, &Tree{Nodes: []Node{n}})
	want := `{"nodes":[{"name_raw":"YTxiPiYiXAF/4oCo4oCpCf8=","link_target":"a\u003cb\u003e\u0026\"\\\u0001` + "\x7f" + `\u2028\u2029\t",` +
		`"type":"fifo","mode":0,"uid":0,"gid":0,"group":"\ufffd","mtime":"2024-01-02T03:04:05.0000006-05:30","ctime":"0000-01-01T00:00:00Z",` +
		`"subtree":"` + id.String() + `","xattrs":[{"name":"user.\u003cx\u003e","value":null},{"name":"","value":""},{"name":"","value":"AAH/"}]}]}`
	if !ok || string(got) != want {
		t.Fatalf("got  %s (%v)\nwant %s", got, ok, want)
	}
	checkEncoder(t, &Tree{Nodes: []Node{n}})
}

func TestAppendTreeDeclinesBadTimes(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)),
	} {
		tree := &Tree{Nodes: []Node{{Name: "a", Type: NodeFile, CTime: tm}}}
		if _, ok := appendTree(nil, tree); ok {
			t.Errorf("appendTree writes %v", tm)
		}
		checkEncoder(t, tree)
		if _, err := encodeTree(tree); err == nil {
			t.Errorf("encodeTree accepts %v", tm)
		}
	}
}

const (
	testID   = `"0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"`
	testTime = `"2024-01-01T00:00:00.5Z"`
)

// treeDeclines are inputs parseTree must leave to encoding/json: some
// decode there (differently from what a naive parser would give), some
// are errors.
var treeDeclines = map[string]string{
	"key of another case":     `{"Nodes":[]}`,
	"node key of other case":  `{"nodes":[{"Name":"a"}]}`,
	"unknown key":             `{"nodes":[],"x":1}`,
	"unknown node key":        `{"nodes":[{"name":"a","color":"red"}]}`,
	"escaped key":             `{"nodes":[{"n\u0061me":"a"}]}`,
	"duplicate nodes":         `{"nodes":[{"name":"a"}],"nodes":[{"type":"dir"}]}`,
	"duplicate node key":      `{"nodes":[{"name":"a","name":"b"}]}`,
	"duplicate content":       `{"nodes":[{"content":[` + testID + `],"content":[]}]}`,
	"duplicate xattr key":     `{"nodes":[{"xattrs":[{"name":"a","name":"b"}]}]}`,
	"null tree":               `null`,
	"null node":               `{"nodes":[null]}`,
	"null name":               `{"nodes":[{"name":null}]}`,
	"null time":               `{"nodes":[{"mtime":null}]}`,
	"null number":             `{"nodes":[{"mode":null}]}`,
	"negative number":         `{"nodes":[{"mode":-1}]}`,
	"negative zero":           `{"nodes":[{"mode":-0}]}`,
	"fraction":                `{"nodes":[{"mode":1.0}]}`,
	"exponent":                `{"nodes":[{"size":1e3}]}`,
	"leading zero":            `{"nodes":[{"uid":01}]}`,
	"uint32 overflow":         `{"nodes":[{"gid":4294967296}]}`,
	"uint64 overflow":         `{"nodes":[{"size":18446744073709551616}]}`,
	"long number":             `{"nodes":[{"size":000000000000000000001}]}`,
	"string for number":       `{"nodes":[{"mode":"1"}]}`,
	"number for string":       `{"nodes":[{"name":1}]}`,
	"bool":                    `{"nodes":[{"name":true}]}`,
	"array for bytes":         `{"nodes":[{"name_raw":[97,98]}]}`,
	"object for node":         `{"nodes":{"name":"a"}}`,
	"surrogate pair":          `{"nodes":[{"name":"\ud83d\ude00"}]}`,
	"lone surrogate":          `{"nodes":[{"name":"\ud800"}]}`,
	"invalid UTF-8":           "{\"nodes\":[{\"name\":\"caf\xe9\"}]}",
	"encoded surrogate":       "{\"nodes\":[{\"name\":\"\xed\xa0\x80\"}]}",
	"invalid escape":          `{"nodes":[{"name":"\x41"}]}`,
	"short unicode escape":    `{"nodes":[{"name":"\u41"}]}`,
	"control byte":            "{\"nodes\":[{\"name\":\"a\x01\"}]}",
	"bad base64":              `{"nodes":[{"name_raw":"!!"}]}`,
	"unpadded base64":         `{"nodes":[{"name_raw":"YQ"}]}`,
	"short id":                `{"nodes":[{"subtree":"0102"}]}`,
	"bad hex id":              `{"nodes":[{"content":["` + strings.Repeat("g", 64) + `"]}]}`,
	"bad time":                `{"nodes":[{"mtime":"2024-01-01"}]}`,
	"escaped time":            `{"nodes":[{"mtime":"2024-01-01T00:00:00\u005a"}]}`,
	"time as number":          `{"nodes":[{"mtime":0}]}`,
	"trailing garbage":        `{"nodes":[]}x`,
	"two values":              `{"nodes":[]} {}`,
	"trailing comma":          `{"nodes":[{"name":"a",}]}`,
	"trailing comma in array": `{"nodes":[{},]}`,
	"missing colon":           `{"nodes" []}`,
	"unterminated":            `{"nodes":[{"name":"a`,
	"backslash at the end":    `{"nodes":[{"name":"a\`,
	"empty":                   ``,
	"byte order mark":         "\ufeff{\"nodes\":[]}",
	"other whitespace":        "{\"nodes\":[]\v}",
}

func TestParseTreeDeclines(t *testing.T) {
	for name, in := range treeDeclines {
		t.Run(name, func(t *testing.T) {
			if checkDecoder(t, []byte(in)) {
				t.Fatalf("parseTree accepts %q", in)
			}
		})
	}
}

// treeAccepts are inputs parseTree must decode itself.
var treeAccepts = map[string]string{
	"empty object":   `{}`,
	"empty nodes":    `{"nodes":[]}`,
	"empty node":     `{"nodes":[{}]}`,
	"empty lists":    `{"nodes":[{"content":[],"xattrs":[]}]}`,
	"null nodes":     `{"nodes":null}`,
	"null fields":    `{"nodes":[{"name_raw":null,"link_target_raw":null,"content":null,"subtree":null,"xattrs":[{"value":null}]},{"xattrs":null}]}`,
	"empty xattr":    `{"nodes":[{"xattrs":[{}]}]}`,
	"empty raw name": `{"nodes":[{"name":"a","name_raw":""}]}`,
	"both names":     `{"nodes":[{"name":"a","name_raw":"Yg==","link_target":"c","link_target_raw":"ZA=="}]}`,
	"whitespace":     " \t\r\n{ \"nodes\" :\n[ { \"name\" : \"a\" , \"mode\" : 0 , \"content\" : [ " + testID + " , " + testID + " ] } , { } ] }\n ",
	"escapes":        `{"nodes":[{"name":"\"\\\/\b\f\n\r\t\u0000\u00e9\uFFFD\u2028","user":"\u003c"}]}`,
	"raw unicode":    `{"nodes":[{"name":"é😀` + "\u2028" + `"}]}`,
	"escaped base64": `{"nodes":[{"name_raw":"YW\nJj\r\n","xattrs":[{"name":"x","value":"\u0041A=="}]}]}`,
	"escaped id":     `{"nodes":[{"subtree":"\u0030102030405060708090A0B0C0D0E0F101112131415161718191a1b1c1d1e1f20"}]}`,
	"big numbers":    `{"nodes":[{"mode":4294967295,"uid":4294967295,"gid":0,"size":18446744073709551615,"rdev":18446744073709551614}]}`,
	"times":          `{"nodes":[{"mtime":"0000-01-01T00:00:00Z","ctime":"9999-12-31T23:59:59.999999999+23:59"}]}`,
	"local time":     `{"nodes":[{"mtime":"2024-06-01T12:00:00+00:00","ctime":"2024-06-01T12:00:00-07:00"}]}`,
	"all fields": `{"nodes":[{"name":"a","link_target":"b","type":"symlink","mode":511,"uid":1,"gid":2,"user":"u","group":"g",` +
		`"size":3,"mtime":` + testTime + `,"ctime":` + testTime + `,"inode":4,"device":5,"links":6,"rdev":7,` +
		`"content":[` + testID + `],"subtree":` + testID + `,"xattrs":[{"name":"user.a","value":"AAE="}]}]}`,
	"any order": `{"nodes":[{"xattrs":[{"value":"","name":"n"}],"subtree":` + testID + `,"rdev":1,"name":"z","type":"x"}]}`,
}

func TestParseTreeAccepts(t *testing.T) {
	for name, in := range treeAccepts {
		t.Run(name, func(t *testing.T) {
			if !checkDecoder(t, []byte(in)) {
				t.Fatalf("parseTree declines %q", in)
			}
		})
	}
}

// Times in the local zone decode with time.Local as their location, in
// both decoders; the test machine's zone may be UTC, so set one.
func TestTreeCodecLocalZone(t *testing.T) {
	saved := time.Local
	time.Local = time.FixedZone("test", -7*3600)
	t.Cleanup(func() { time.Local = saved })
	tm := time.Date(2024, 6, 1, 12, 0, 0, 5, time.Local)
	checkEncoder(t, &Tree{Nodes: []Node{{Name: "a", MTime: tm, CTime: tm.UTC()}}})
	in := `{"nodes":[{"mtime":"2024-06-01T12:00:00-07:00","ctime":"2024-06-01T12:00:00+07:00"}]}`
	if !checkDecoder(t, []byte(in)) {
		t.Fatalf("parseTree declines %s", in)
	}
}

// FuzzEncodeTree checks the encoder against json.Marshal for nodes made of
// fuzzed fields, and that the fast decoder reads the result back as
// json.Unmarshal does.
func FuzzEncodeTree(f *testing.F) {
	f.Add("file.txt", "", "file", "alice", "staff", "user.x", uint32(0o644), uint32(1000), uint64(1234), int64(1700000000), int64(123456789), 0, "", []byte("0123456789abcdef"), []byte("v"), uint16(0))
	f.Add("caf\xe9<&>", "\xff/\u2028\u2029", "symlink", "", "\x00\x1f\x7f", "", uint32(1<<32-1), uint32(0), uint64(1<<64-1), int64(-62135596800), int64(1), 3600+7, "odd", []byte(nil), []byte(nil), uint16(0xffff))
	f.Add("a\tb\nc\"d\\e", "\ufffd", "dir", "\xed\xa0\x80", "g", "\u00e9", uint32(1), uint32(2), uint64(0), int64(253402300800), int64(0), -86400, "", []byte{}, []byte{}, uint16(0x5555))
	f.Add("", "", "", "", "", "", uint32(0), uint32(0), uint64(0), int64(-62167219201), int64(999999999), 86399, "Z", []byte("x"), []byte{0}, uint16(0xaaaa))
	f.Fuzz(func(t *testing.T, name, target, typ, user, group, xname string, mode, uid uint32, size uint64, sec, nsec int64, zoneOffset int, zoneName string, content, xvalue []byte, flags uint16) {
		bit := func(i uint) bool { return flags&(1<<i) != 0 }
		zones := []*time.Location{time.UTC, time.Local, time.FixedZone(zoneName, zoneOffset)}
		n := Node{
			Name: name, LinkTarget: target, Type: typ, Mode: mode, UID: uid, GID: ^uid, User: user, Group: group,
			Size: size, Inode: size >> 3, Device: uint64(mode), Links: uint64(uid) << 20, Rdev: size ^ uint64(flags),
			MTime: time.Unix(sec, nsec).In(zones[flags%3]),
			CTime: time.Unix(-sec/3, -nsec).In(zones[flags/3%3]),
		}
		if bit(4) {
			n.CTime = time.Now() // with a monotonic reading
		}
		if !bit(5) {
			n.Content = []ID{} // empty, or nil with bit 5 when there is no content
		}
		for len(content) >= 4 {
			var id ID
			copy(id[:], bytes.Repeat(content[:4], 8))
			n.Content = append(n.Content, id)
			content = content[4:]
		}
		if bit(6) {
			id := seedID(byte(flags >> 8))
			n.Subtree = &id
		}
		switch {
		case bit(7):
			n.Xattrs = []Xattr{{Name: xname, Value: xvalue}, {Name: name}}
		case bit(8):
			n.Xattrs = []Xattr{}
		}
		var tree Tree
		switch {
		case bit(9):
			tree.Nodes = []Node{n, {}, n}
		case bit(10):
			tree.Nodes = []Node{}
		case !bit(11):
			tree.Nodes = []Node{n}
		}
		checkEncoder(t, &tree)
	})
}

// FuzzDecodeTree checks the decoder against json.Unmarshal on any input.
func FuzzDecodeTree(f *testing.F) {
	encoded, err := encodeTree(benchTree())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(encoded)
	for _, in := range treeDeclines {
		f.Add([]byte(in))
	}
	for _, in := range treeAccepts {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecoder(t, data)
		// Most inputs are not trees, and the fast path declines them at
		// once; as a value of each kind, it has to read them.
		for _, tmpl := range valueTemplates {
			checkDecoder(t, bytes.ReplaceAll([]byte(tmpl), []byte("@"), data))
		}
	})
}

// valueTemplates are trees with a value of each kind replaced by "@".
var valueTemplates = []string{
	`{"nodes":[{"name":"@","type":"file"}]}`,
	`{"nodes":[{"name_raw":"@"}]}`,
	`{"nodes":[{"mode":@,"size":1}]}`,
	`{"nodes":[{"size":@}]}`,
	`{"nodes":[{"mtime":"@"}]}`,
	`{"nodes":[{"content":["@"]}]}`,
	`{"nodes":[{"xattrs":[@]}]}`,
	`{"nodes":[{@}]}`,
	`{"nodes":[@]}`,
}

func BenchmarkEncodeTree(b *testing.B) {
	tree := benchTree()
	data, err := encodeTree(tree)
	if err != nil {
		b.Fatal(err)
	}
	for _, bm := range []struct {
		name   string
		encode func(*Tree) ([]byte, error)
	}{{"fast", encodeTree}, {"json", marshalTree}} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bm.encode(tree); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeTree(b *testing.B) {
	data, err := encodeTree(benchTree())
	if err != nil {
		b.Fatal(err)
	}
	for _, bm := range []struct {
		name   string
		decode func([]byte) (*Tree, error)
	}{{"fast", decodeTreeOnly}, {"json", unmarshalTree}} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bm.decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
