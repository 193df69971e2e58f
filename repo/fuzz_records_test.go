package repo

// Fuzz targets for the small records read straight from a backend:
// snapshots, locks, pins and verification records. Each gets the bytes of
// one stored file, as an attacker with write access to the repository
// could plant them, both raw and sealed (so that the JSON inside is
// reached too), and must answer with the record or an error of its class,
// never a panic.

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// oneFile is a backend that holds the same bytes under every name.
type oneFile struct{ data []byte }

func (b oneFile) Save(context.Context, Handle, []byte) error { return errors.New("read-only") }
func (b oneFile) Load(_ context.Context, _ Handle, offset, length int64) ([]byte, error) {
	if offset != 0 || length != -1 {
		return nil, errors.New("only whole loads")
	}
	return b.data, nil
}
func (b oneFile) Stat(context.Context, Handle) (int64, error) { return int64(len(b.data)), nil }
func (b oneFile) List(context.Context, FileType, func(string, int64) error) error {
	return nil
}
func (b oneFile) Remove(context.Context, Handle) error { return errors.New("read-only") }
func (b oneFile) Location() string                     { return "one file" }

// fuzzRecordID is the name every fuzzed record is read under.
const fuzzRecordID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// recordInputs are raw (as stored) and plain (sealed here as kind under
// fuzzRecordID) for the record readers.
func recordInputs(kind string, raw, plain []byte) [][]byte {
	s := plainSealer{}
	return [][]byte{raw, sealObject(s, kind, fuzzRecordID, plain)}
}

// recordSeeds adds a valid record of kind and damaged versions of it.
func recordSeeds(f *testing.F, kind string, record any) {
	plain, err := json.Marshal(record)
	if err != nil {
		f.Fatal(err)
	}
	valid := sealObject(plainSealer{}, kind, fuzzRecordID, plain)
	f.Add(valid, plain)
	f.Add(valid[:len(valid)-1], plain[:len(plain)/2])
	f.Add([]byte{}, []byte(`null`))
	f.Add([]byte("nightjar "+kind+" 1\n"), []byte(`{"time":"not a time"}`))
	f.Add(valid[:20], []byte(`[]`))
}

// classified fails the test unless err is nil or of a reader's classes.
func classified(t *testing.T, what string, err error) {
	if err != nil && !isClass(err) {
		t.Fatalf("%s rejected without a class: %v", what, err)
	}
}

func FuzzLoadSnapshot(f *testing.F) {
	recordSeeds(f, "snapshot", Snapshot{Time: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Tree: seedID(3), Paths: []string{"/home"}, Hostname: "h", Tags: []string{"t"}})
	f.Fuzz(func(t *testing.T, raw, plain []byte) {
		for _, data := range recordInputs("snapshot", raw, plain) {
			r := &Repository{be: oneFile{data}, seal: plainSealer{}}
			s, err := r.LoadSnapshot(context.Background(), fuzzRecordID)
			classified(t, "snapshot", err)
			if err == nil && s.ID != fuzzRecordID {
				t.Fatalf("snapshot read as %q, want its own name", s.ID)
			}
		}
	})
}

func FuzzReadLock(f *testing.F) {
	recordSeeds(f, "lock", LockInfo{Exclusive: true, Hostname: "h", Username: "u", PID: 42, Time: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Purpose: "backup"})
	f.Fuzz(func(t *testing.T, raw, plain []byte) {
		for _, data := range recordInputs("lock", raw, plain) {
			r := &Repository{be: oneFile{data}, seal: plainSealer{}}
			info, err := r.readLock(context.Background(), fuzzRecordID)
			classified(t, "lock", err)
			if err == nil {
				_ = info.String() // a lock is shown in messages
			}
		}
	})
}

func FuzzLoadPin(f *testing.F) {
	recordSeeds(f, "pin", Pin{Snapshot: fuzzRecordID})
	f.Fuzz(func(t *testing.T, raw, plain []byte) {
		for _, data := range recordInputs("pin", raw, plain) {
			r := &Repository{be: oneFile{data}, seal: plainSealer{}}
			p, err := r.loadPin(context.Background(), fuzzRecordID)
			if err != nil && !isClass(err) && !errors.Is(err, ErrNotFound) {
				t.Fatalf("pin rejected without a class: %v", err)
			}
			if err == nil && p.Snapshot != fuzzRecordID {
				t.Fatalf("pin of %q accepted under %s", p.Snapshot, fuzzRecordID)
			}
		}
	})
}

func FuzzLoadVerification(f *testing.F) {
	recordSeeds(f, "verification", Verification{Snapshot: fuzzRecordID})
	f.Fuzz(func(t *testing.T, raw, plain []byte) {
		for _, data := range recordInputs("verification", raw, plain) {
			r := &Repository{be: oneFile{data}, seal: plainSealer{}}
			v, err := r.Verification(context.Background(), fuzzRecordID)
			classified(t, "verification", err)
			if err == nil && v.Snapshot != fuzzRecordID {
				t.Fatalf("verification of %q accepted under %s", v.Snapshot, fuzzRecordID)
			}
		}
	})
}
