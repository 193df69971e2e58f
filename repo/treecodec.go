package repo

// A hand-written codec for tree blobs. encoding/json defines the format
// (treeJSON in tree.go), but its reflection and its scanner cost a re-backup
// more CPU than hashing does, as every unchanged directory is decoded and
// encoded again. The encoder here writes exactly the bytes json.Marshal
// writes; the decoder accepts only input it decodes exactly as
// json.Unmarshal does, and declines the rest, which then goes through
// encoding/json. Both are checked against encoding/json by fuzzing
// (treecodec_test.go).

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// appendTree appends t as json.Marshal writes its treeJSON. ok is false if
// some node holds a value json.Marshal rejects (a time it cannot write);
// the caller then leaves the tree to encoding/json, for its error.
func appendTree(b []byte, t *Tree) (_ []byte, ok bool) {
	if t.Nodes == nil {
		return append(b, `{"nodes":null}`...), true
	}
	b = append(b, `{"nodes":[`...)
	for i := range t.Nodes {
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = appendNode(b, &t.Nodes[i]); !ok {
			return nil, false
		}
	}
	return append(b, "]}"...), true
}

// treeSizeHint estimates the length of t's encoding, so that appendTree
// rarely has to grow its buffer.
func treeSizeHint(t *Tree) int {
	const fixed = 16    // {"nodes":[]}
	const perNode = 256 // keys, numbers and two times, generously
	const perID = 2*len(ID{}) + 4
	n := fixed
	for i := range t.Nodes {
		nd := &t.Nodes[i]
		n += perNode + len(nd.Name) + len(nd.LinkTarget) + len(nd.User) + len(nd.Group) + perID*len(nd.Content)
		if nd.Subtree != nil {
			n += perID + 10
		}
		for _, x := range nd.Xattrs {
			n += 24 + len(x.Name) + base64.StdEncoding.EncodedLen(len(x.Value))
		}
	}
	return n
}

// appendNode appends one nodeJSON, its fields in the struct's order. The
// name fields are optional and "type" never is, so each name field carries
// the comma after it and every field after "type" the comma before it.
func appendNode(b []byte, n *Node) (_ []byte, ok bool) {
	b = append(b, '{')
	b = appendNameField(b, `"name":`, `"name_raw":`, n.Name)
	b = appendNameField(b, `"link_target":`, `"link_target_raw":`, n.LinkTarget)
	b = append(b, `"type":`...)
	b = appendJSONString(b, n.Type)
	b = appendUintField(b, `,"mode":`, uint64(n.Mode))
	b = appendUintField(b, `,"uid":`, uint64(n.UID))
	b = appendUintField(b, `,"gid":`, uint64(n.GID))
	if n.User != "" {
		b = append(b, `,"user":`...)
		b = appendJSONString(b, n.User)
	}
	if n.Group != "" {
		b = append(b, `,"group":`...)
		b = appendJSONString(b, n.Group)
	}
	if n.Size != 0 {
		b = appendUintField(b, `,"size":`, n.Size)
	}
	if b, ok = appendTimeField(b, `,"mtime":`, n.MTime); !ok {
		return nil, false
	}
	if b, ok = appendTimeField(b, `,"ctime":`, n.CTime); !ok {
		return nil, false
	}
	for _, f := range [...]struct {
		key string
		v   uint64
	}{{`,"inode":`, n.Inode}, {`,"device":`, n.Device}, {`,"links":`, n.Links}, {`,"rdev":`, n.Rdev}} {
		if f.v != 0 {
			b = appendUintField(b, f.key, f.v)
		}
	}
	b = appendContent(b, n.Content)
	if n.Subtree != nil {
		b = append(b, `,"subtree":`...)
		b = appendID(b, *n.Subtree)
	}
	b = appendXattrs(b, n.Xattrs)
	return append(b, '}'), true
}

// appendNameField writes a name as splitRaw splits it: valid UTF-8 as a
// string, anything else base64-encoded under the raw key; nothing for an
// empty name, which both keys omit.
func appendNameField(b []byte, key, rawKey, name string) []byte {
	switch {
	case name == "":
		return b
	case utf8.ValidString(name):
		b = append(b, key...)
		b = appendJSONString(b, name)
	default:
		b = append(b, rawKey...)
		b = appendBase64(b, []byte(name))
	}
	return append(b, ',')
}

func appendUintField(b []byte, key string, v uint64) []byte {
	b = append(b, key...)
	return strconv.AppendUint(b, v, 10)
}

// appendTimeField writes t as time.Time's MarshalJSON does: AppendText is
// the same RFC 3339 formatting, with the same range checks, and what it
// writes never needs escaping.
func appendTimeField(b []byte, key string, t time.Time) (_ []byte, ok bool) {
	b = append(b, key...)
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, false
	}
	return append(b, '"'), true
}

// appendContent writes the content IDs; encoding/json omits an empty list,
// nil or not.
func appendContent(b []byte, ids []ID) []byte {
	if len(ids) == 0 {
		return b
	}
	b = append(b, `,"content":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendID(b, id)
	}
	return append(b, ']')
}

// appendID writes id as encoding/json writes a TextMarshaler: its
// MarshalText (hex) as a string, which needs no escaping.
func appendID(b []byte, id ID) []byte {
	b = append(b, '"')
	b = hex.AppendEncode(b, id[:])
	return append(b, '"')
}

// appendXattrs writes the extended attributes; encoding/json omits an empty
// list, nil or not, but writes a nil Value as null.
func appendXattrs(b []byte, xattrs []Xattr) []byte {
	if len(xattrs) == 0 {
		return b
	}
	b = append(b, `,"xattrs":[`...)
	for i, x := range xattrs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendJSONString(b, x.Name)
		b = append(b, `,"value":`...)
		if x.Value == nil {
			b = append(b, "null"...)
		} else {
			b = appendBase64(b, x.Value)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendBase64 writes a []byte as encoding/json does: standard base64,
// padded, as a string.
func appendBase64(b, data []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, data)
	return append(b, '"')
}

// htmlSafe holds the ASCII bytes json.Marshal writes into a string as they
// are: printable ASCII and DEL, except '"' and '\\', which need a
// backslash, and '<', '>' and '&', which json.Marshal escapes so that the
// JSON can sit inside HTML.
var htmlSafe = func() (safe [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		safe[c] = true
	}
	for _, c := range `"\<>&` {
		safe[c] = false
	}
	return safe
}()

// appendJSONString writes s as json.Marshal writes a string: the escapes
// above, each byte of invalid UTF-8 as \ufffd, and U+2028 and U+2029
// escaped (they end lines in JavaScript). Runs of bytes that need nothing
// are copied at once.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if !htmlSafe[c] {
				b = append(b, s[start:i]...)
				b = appendEscapedByte(b, c)
				start = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			// An invalid byte comes back as RuneError, U+FFFD, which is
			// what encoding/json writes for it.
			b = append(b, s[start:i]...)
			b = appendUnicodeEscape(b, r)
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendEscapedByte escapes an ASCII byte as encoding/json does: the short
// forms it uses, and \u00XX for the others.
func appendEscapedByte(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\b':
		return append(b, `\b`...)
	case '\f':
		return append(b, `\f`...)
	case '\n':
		return append(b, `\n`...)
	case '\r':
		return append(b, `\r`...)
	case '\t':
		return append(b, `\t`...)
	}
	return appendUnicodeEscape(b, rune(c))
}

// appendUnicodeEscape writes \uXXXX with lowercase hex digits, as
// encoding/json does, for a rune of the Basic Multilingual Plane.
func appendUnicodeEscape(b []byte, r rune) []byte {
	const digits = "0123456789abcdef"
	return append(b, '\\', 'u', digits[r>>12&0xf], digits[r>>8&0xf], digits[r>>4&0xf], digits[r&0xf])
}

// treeParser is decodeTree's fast path: a parser for the JSON of a tree
// that gives up (returns false) on anything it cannot decode exactly as
// json.Unmarshal into treeJSON would, such as keys that are not one of
// the struct's own names (encoding/json matches them case-insensitively
// and skips unknown ones), keys seen twice in one object (encoding/json
// merges them), null other than for slices and the subtree pointer (where
// encoding/json and this parser leave nil), numbers other than plain
// unsigned integers, escapes of surrogates, invalid UTF-8 in strings
// (encoding/json replaces it), and everything that is not JSON.
// encoding/json decides those.
type treeParser struct {
	data []byte
	pos  int
	buf  []byte // unescaped string, when it has escapes
	ids  []ID   // a node's content IDs, as they are parsed

	// The previous node's user and group, reused, so that a directory of
	// one owner holds one copy of the names.
	user, group string
}

// parseTree decodes data into a treeJSON. ok is false if the parser gave
// up; tj is then the zero value.
func parseTree(data []byte) (tj treeJSON, ok bool) {
	p := treeParser{data: data}
	var seen bool
	ok = p.object(func(key []byte) bool {
		if string(key) != "nodes" || seen {
			return false
		}
		seen = true
		return p.null() || p.nodes(&tj)
	})
	p.skipSpace()
	if !ok || p.pos != len(p.data) {
		return treeJSON{}, false
	}
	return tj, true
}

func (p *treeParser) nodes(tj *treeJSON) bool {
	// An empty list decodes to an empty slice, not nil, as in encoding/json.
	// Every node encodeTree writes has an mtime, so counting the key sizes
	// the slice, which saves growing it. The count is only a hint (a name
	// may hold the key, escaped), and is capped by the bytes a node with
	// an mtime takes at least, so that crafted input cannot make the
	// slice much larger than the input.
	const minNode = len(`{"mtime":"0000-01-01T00:00:00Z"}`)
	hint := min(bytes.Count(p.data, []byte(`mtime"`)), len(p.data)/minNode)
	tj.Nodes = make([]nodeJSON, 0, hint)
	return p.list(func() bool {
		tj.Nodes = append(tj.Nodes, nodeJSON{})
		return p.node(&tj.Nodes[len(tj.Nodes)-1])
	})
}

func (p *treeParser) node(n *nodeJSON) bool {
	var seen uint32
	return p.object(func(key []byte) bool {
		bit, ok := p.nodeField(n, key)
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
}

// nodeField decodes the value of one field of n and returns a bit that
// stands for the field, for finding duplicate keys.
func (p *treeParser) nodeField(n *nodeJSON, key []byte) (bit uint32, ok bool) {
	switch string(key) {
	case "name":
		return 1 << 0, p.str(&n.Name)
	case "name_raw":
		return 1 << 1, p.null() || p.byteSlice(&n.NameRaw)
	case "link_target":
		return 1 << 2, p.str(&n.LinkTarget)
	case "link_target_raw":
		return 1 << 3, p.null() || p.byteSlice(&n.LinkTargetRaw)
	case "type":
		return 1 << 4, p.nodeType(&n.Type)
	case "mode":
		return 1 << 5, p.u32(&n.Mode)
	case "uid":
		return 1 << 6, p.u32(&n.UID)
	case "gid":
		return 1 << 7, p.u32(&n.GID)
	case "user":
		return 1 << 8, p.reused(&n.User, &p.user)
	case "group":
		return 1 << 9, p.reused(&n.Group, &p.group)
	case "size":
		return 1 << 10, p.u64(&n.Size)
	case "mtime":
		return 1 << 11, p.timestamp(&n.MTime)
	case "ctime":
		return 1 << 12, p.timestamp(&n.CTime)
	case "inode":
		return 1 << 13, p.u64(&n.Inode)
	case "device":
		return 1 << 14, p.u64(&n.Device)
	case "links":
		return 1 << 15, p.u64(&n.Links)
	case "rdev":
		return 1 << 16, p.u64(&n.Rdev)
	case "content":
		return 1 << 17, p.null() || p.content(&n.Content)
	case "subtree":
		return 1 << 18, p.null() || p.subtree(&n.Subtree)
	case "xattrs":
		return 1 << 19, p.null() || p.xattrs(&n.Xattrs)
	}
	return 0, false
}

func (p *treeParser) content(ids *[]ID) bool {
	// The IDs are collected in p.ids and then copied, so that the slice
	// is allocated once and at its size; make gives an empty slice, not
	// nil, for [], as encoding/json does.
	p.ids = p.ids[:0]
	ok := p.list(func() bool {
		p.ids = append(p.ids, ID{})
		return p.id(&p.ids[len(p.ids)-1])
	})
	*ids = make([]ID, len(p.ids))
	copy(*ids, p.ids)
	return ok
}

func (p *treeParser) xattrs(xattrs *[]Xattr) bool {
	*xattrs = []Xattr{} // empty, not nil, as in encoding/json
	return p.list(func() bool {
		*xattrs = append(*xattrs, Xattr{})
		return p.xattr(&(*xattrs)[len(*xattrs)-1])
	})
}

func (p *treeParser) xattr(x *Xattr) bool {
	var name, value bool
	return p.object(func(key []byte) bool {
		switch {
		case string(key) == "name" && !name:
			name = true
			return p.str(&x.Name)
		case string(key) == "value" && !value:
			value = true
			return p.null() || p.byteSlice(&x.Value)
		}
		return false
	})
}

// null parses null, if it is next. The callers are fields that
// encoding/json sets to nil for null, and that are nil already, as keys
// are not repeated.
func (p *treeParser) null() bool {
	p.skipSpace()
	if bytes.HasPrefix(p.data[p.pos:], []byte("null")) {
		p.pos += len("null")
		return true
	}
	return false
}

// object parses an object, calling field for each key, with p at its value.
func (p *treeParser) object(field func(key []byte) bool) bool {
	if !p.consume('{') {
		return false
	}
	if p.consume('}') {
		return true
	}
	for {
		key, ok := p.key()
		if !ok || !field(key) {
			return false
		}
		if p.consume('}') {
			return true
		}
		if !p.consume(',') {
			return false
		}
	}
}

// list parses an array, calling elem with p at each element.
func (p *treeParser) list(elem func() bool) bool {
	if !p.consume('[') {
		return false
	}
	if p.consume(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if p.consume(']') {
			return true
		}
		if !p.consume(',') {
			return false
		}
	}
}

// key parses an object's key and the colon after it. Keys with escapes
// are left to encoding/json: none of ours needs one.
func (p *treeParser) key() ([]byte, bool) {
	raw, escaped, ok := p.scanString()
	if !ok || escaped || !p.consume(':') {
		return nil, false
	}
	return raw[1 : len(raw)-1], true
}

// skipSpace skips the whitespace JSON allows between tokens.
func (p *treeParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// consume skips whitespace and then c, if c is next.
func (p *treeParser) consume(c byte) bool {
	if p.pos < len(p.data) && p.data[p.pos] != c {
		p.skipSpace() // only then, as there is rarely any
	}
	if p.pos < len(p.data) && p.data[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// plainByte holds the bytes a string may hold that end nothing and need
// no check: ASCII from the space on, except '"' and '\\'.
var plainByte = func() (plain [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

// scanString parses a string and returns it as it is in the input, quotes
// included, and whether it has escapes. It gives up on what JSON does not
// allow in strings (control bytes) and on invalid UTF-8, which
// encoding/json would replace. Escapes are only skipped here; unescape
// checks them.
func (p *treeParser) scanString() (raw []byte, escaped, ok bool) {
	if !p.consume('"') {
		return nil, false, false
	}
	data, start := p.data, p.pos-1
	for i := p.pos; ; {
		for i < len(data) && plainByte[data[i]] {
			i++
		}
		if i >= len(data) { // also after a backslash at the end
			return nil, false, false
		}
		switch c := data[i]; {
		case c == '"':
			p.pos = i + 1
			return data[start:p.pos], escaped, true
		case c == '\\':
			escaped = true
			i += 2
		case c < ' ':
			return nil, false, false
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return nil, false, false
			}
			i += size
		}
	}
}

// unquoted parses a string and returns its value, which may be p.buf and
// is valid until the next call.
func (p *treeParser) unquoted() ([]byte, bool) {
	raw, escaped, ok := p.scanString()
	if !ok {
		return nil, false
	}
	s := raw[1 : len(raw)-1]
	if !escaped {
		return s, true
	}
	return p.unescape(s)
}

// unescape decodes the escapes of a string's contents into p.buf, as
// encoding/json does; it gives up on \u escapes of UTF-16 surrogates,
// which encoding/json pairs or replaces, and on escapes JSON does not have.
func (p *treeParser) unescape(s []byte) ([]byte, bool) {
	b := p.buf[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		if i++; i == len(s) {
			return nil, false
		}
		switch c = s[i]; c {
		case '"', '\\', '/':
			b = append(b, c)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(s[i+1:])
			if !ok || utf16.IsSurrogate(r) {
				return nil, false
			}
			b = utf8.AppendRune(b, r)
			i += 4
		default:
			return nil, false
		}
	}
	p.buf = b
	return b, true
}

// hex4 decodes the four hex digits of a \u escape.
func hex4(s []byte) (rune, bool) {
	var b [2]byte
	if len(s) < 4 {
		return 0, false
	}
	if _, err := hex.Decode(b[:], s[:4]); err != nil {
		return 0, false
	}
	return rune(b[0])<<8 | rune(b[1]), true
}

func (p *treeParser) str(dst *string) bool {
	s, ok := p.unquoted()
	*dst = string(s)
	return ok
}

// reused is str that keeps *last, the same field's value in the previous
// node, instead of a new copy when the value is the same.
func (p *treeParser) reused(dst, last *string) bool {
	s, ok := p.unquoted()
	if string(s) != *last {
		*last = string(s)
	}
	*dst = *last
	return ok
}

// nodeType is str that uses the constants for the known types, saving a
// copy per node. (A switch: a loop over a list of them decoded trees 8%
// slower.)
func (p *treeParser) nodeType(dst *string) bool {
	s, ok := p.unquoted()
	switch string(s) {
	case NodeFile:
		*dst = NodeFile
	case NodeDir:
		*dst = NodeDir
	case NodeSymlink:
		*dst = NodeSymlink
	case NodeFIFO:
		*dst = NodeFIFO
	case NodeCharDev:
		*dst = NodeCharDev
	case NodeBlockDev:
		*dst = NodeBlockDev
	case NodeSocket:
		*dst = NodeSocket
	default:
		*dst = string(s)
	}
	return ok
}

// byteSlice decodes a []byte as encoding/json does: standard base64 of the
// string's unescaped value (so the \r and \n the decoder skips may be in
// it), into a new slice that is empty but not nil for "".
func (p *treeParser) byteSlice(dst *[]byte) bool {
	s, ok := p.unquoted()
	if !ok {
		return false
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, s)
	*dst = b[:n]
	return err == nil
}

// id decodes an ID from the string's unescaped value. It accepts exactly
// what (*ID).UnmarshalText accepts, 64 hex digits of either case, with the
// same result, but without UnmarshalText's copies of the digits.
func (p *treeParser) id(dst *ID) bool {
	s, ok := p.unquoted()
	if !ok || len(s) != 2*len(dst) {
		return false
	}
	_, err := hex.Decode(dst[:], s)
	return err == nil
}

// subtree decodes an ID into a new *ID, as encoding/json does.
func (p *treeParser) subtree(dst **ID) bool {
	*dst = new(ID)
	return p.id(*dst)
}

// timestamp decodes a time as encoding/json does: (*time.Time).UnmarshalJSON
// of the string as it is in the input, quotes included. Escapes in it
// make UnmarshalJSON fail, as RFC 3339 has no backslash.
func (p *treeParser) timestamp(dst *time.Time) bool {
	raw, _, ok := p.scanString()
	return ok && dst.UnmarshalJSON(raw) == nil
}

func (p *treeParser) u32(dst *uint32) bool {
	v, ok := p.number(1<<32 - 1)
	*dst = uint32(v)
	return ok
}

func (p *treeParser) u64(dst *uint64) bool {
	v, ok := p.number(1<<64 - 1)
	*dst = v
	return ok
}

// number parses a number that is a plain decimal integer, at most limit. It
// gives up on a sign, a fraction or an exponent, which encoding/json
// rejects for unsigned fields or which are not JSON, by leaving them to
// the caller, which expects a ',' or '}' next. A leading zero ends the
// number the same way ("01" is not JSON).
func (p *treeParser) number(limit uint64) (uint64, bool) {
	p.skipSpace()
	i := p.pos
	if i == len(p.data) || p.data[i] < '0' || p.data[i] > '9' {
		return 0, false
	}
	if p.data[i] == '0' {
		p.pos = i + 1
		return 0, true
	}
	var v uint64
	for ; i < len(p.data) && '0' <= p.data[i] && p.data[i] <= '9'; i++ {
		d := uint64(p.data[i] - '0')
		if v > (limit-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	p.pos = i
	return v, true
}
