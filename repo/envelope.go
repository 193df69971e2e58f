package repo

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// FormatVersion is the version of every object type this code writes and
// the newest it reads.
const FormatVersion = 1

// Every object but packs starts with one ASCII line "nightjar <kind> <version>"
// (config adds its encryption), followed by the sealed body. The line and the
// object's name are the associated data of the seal, so neither can be
// changed, and an object cannot be moved to another name, unnoticed.

func headerLine(kind string, extra ...string) []byte {
	parts := append([]string{"nightjar", kind, strconv.Itoa(FormatVersion)}, extra...)
	return []byte(strings.Join(parts, " ") + "\n")
}

// associatedData is the seal's associated data: the bytes before the sealed
// body, a zero byte, and the object's name ("" for content-addressed objects).
func associatedData(prefix []byte, name string) []byte {
	ad := make([]byte, 0, len(prefix)+1+len(name))
	ad = append(ad, prefix...)
	ad = append(ad, 0)
	return append(ad, name...)
}

// splitHeader checks the first line of an object of the given kind and
// returns its fields after the version, and the rest of the data.
func splitHeader(kind string, data []byte) (extra []string, header, body []byte, err error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 || nl > 200 {
		return nil, nil, nil, fmt.Errorf("%s: no header line: %w", kind, ErrIntegrity)
	}
	fields := strings.Fields(string(data[:nl]))
	if len(fields) < 3 || fields[0] != "nightjar" || fields[1] != kind {
		return nil, nil, nil, fmt.Errorf("%s: not a nightjar %s object: %w", kind, kind, ErrIntegrity)
	}
	v, err := strconv.Atoi(fields[2])
	if err != nil || v < 1 {
		return nil, nil, nil, fmt.Errorf("%s: bad version %q: %w", kind, fields[2], ErrIntegrity)
	}
	if v > FormatVersion {
		return nil, nil, nil, fmt.Errorf("%s format version %d (this nightjar reads up to %d; upgrade nightjar): %w",
			kind, v, FormatVersion, ErrUnsupportedVersion)
	}
	return fields[3:], data[:nl+1], data[nl+1:], nil
}

// sealObject builds a whole object: header line and sealed body.
func sealObject(s sealer, kind, name string, plain []byte) []byte {
	header := headerLine(kind)
	out := make([]byte, 0, len(header)+len(plain)+s.overhead())
	out = append(out, header...)
	return s.seal(out, plain, associatedData(header, name))
}

// openObject checks and opens an object made by sealObject.
func openObject(s sealer, kind, name string, data []byte) ([]byte, error) {
	_, header, body, err := splitHeader(kind, data)
	if err != nil {
		return nil, err
	}
	plain, err := s.open(nil, body, associatedData(header, name))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	return plain, nil
}
