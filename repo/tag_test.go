package repo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// A tag change does what restic's --set, --add and --remove do.
func TestTagChangeApply(t *testing.T) {
	tests := []struct {
		name   string
		change repo.TagChange
		tags   []string
		want   []string
	}{
		{"add keeps the order and appends", repo.TagChange{Add: []string{"c", "a"}}, []string{"a", "b"}, []string{"a", "b", "c"}},
		{"add to no tags", repo.TagChange{Add: []string{"x"}}, nil, []string{"x"}},
		{"add a tag twice lists it once", repo.TagChange{Add: []string{"x", "x"}}, nil, []string{"x"}},
		{"remove", repo.TagChange{Remove: []string{"a"}}, []string{"a", "b"}, []string{"b"}},
		{"remove a tag that is not there", repo.TagChange{Remove: []string{"z"}}, []string{"a"}, []string{"a"}},
		{"add and remove the same tag: removed", repo.TagChange{Add: []string{"a"}, Remove: []string{"a"}}, nil, nil},
		{"set replaces", repo.TagChange{Set: []string{"y", "x"}, SetTags: true}, []string{"a"}, []string{"y", "x"}},
		{"set nothing removes all", repo.TagChange{SetTags: true}, []string{"a", "b"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.change.Apply(tc.tags)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Apply(%q) = %q, want %q", tc.tags, got, tc.want)
			}
		})
	}
}

// selectIDs is a TagSelect that chooses ids.
func selectIDs(ids ...string) repo.TagSelect {
	return func([]*repo.Snapshot) ([]string, error) { return ids, nil }
}

// A changed snapshot keeps its ID and everything but its tags, so that its
// pin and its verification record still refer to it (check finds nothing
// dangling); asking for tags it has already rewrites nothing.
func TestChangeTagsKeepsTheSnapshotsID(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r, id := repoWithSnapshot(t, be)
	if _, err := r.Pin(ctx, id, "keep"); err != nil {
		t.Fatal(err)
	}
	lock, err := r.Lock(ctx, false, "verify")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SaveVerification(ctx, &repo.Verification{Snapshot: id, OK: true}); err != nil {
		t.Fatal(err)
	}
	lock.Unlock()
	before, err := r.LoadSnapshot(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	res, err := r.ChangeTags(ctx, selectIDs(id), repo.TagChange{Add: []string{"offsite", "2026"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changed) != 1 || res.Changed[0].Snapshot.ID != id || len(res.Changed[0].Old) != 0 || len(res.Unchanged) != 0 {
		t.Fatalf("result %+v, want snapshot %s changed", res, id)
	}
	ids, err := r.ListSnapshotIDs(ctx)
	if err != nil || !slices.Equal(ids, []string{id}) {
		t.Fatalf("snapshots after the change = %v, %v; want only %s", ids, err, id)
	}
	after, err := openRepo(t, be).LoadSnapshot(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(after.Tags, []string{"offsite", "2026"}) {
		t.Errorf("tags = %q, want [offsite 2026]", after.Tags)
	}
	after.Tags = before.Tags
	if !after.Time.Equal(before.Time) || after.Tree != before.Tree || after.Hostname != before.Hostname || !slices.Equal(after.Paths, before.Paths) {
		t.Errorf("record changed beyond its tags: %+v, was %+v", after, before)
	}
	if pinned, _ := r.PinnedIDs(ctx); !slices.Equal(pinned, []string{id}) {
		t.Errorf("pins = %v, want the snapshot's", pinned)
	}
	if v, err := r.Verification(ctx, id); err != nil || !v.OK {
		t.Errorf("verification = %+v, %v; want the OK record", v, err)
	}
	rep, err := r.Check(ctx, repo.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.DanglingPins) != 0 || len(rep.DanglingVerifications) != 0 || len(rep.Problems) != 0 {
		t.Errorf("check after a tag change: dangling pins %v, verifications %v, problems %v",
			rep.DanglingPins, rep.DanglingVerifications, rep.Problems)
	}

	record := load(t, be, repo.Handle{Type: repo.SnapshotFile, Name: id})
	res, err = r.ChangeTags(ctx, selectIDs(id), repo.TagChange{Add: []string{"2026"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changed) != 0 || len(res.Unchanged) != 1 {
		t.Errorf("adding a tag it has: %+v, want it unchanged", res)
	}
	if !bytes.Equal(load(t, be, repo.Handle{Type: repo.SnapshotFile, Name: id}), record) {
		t.Error("a change that changes nothing rewrote the record")
	}
}

// failingSave is a backend whose Save of snapshot records fails: the
// record being replaced when the process dies.
type failingSave struct{ repo.Backend }

func (f failingSave) Save(ctx context.Context, h repo.Handle, data []byte) error {
	if h.Type == repo.SnapshotFile {
		return errors.New("disk gone")
	}
	return f.Backend.Save(ctx, h, data)
}

func (f failingSave) Unwrap() repo.Backend { return f.Backend }

// A replacement that fails leaves the old record whole: the snapshot is
// never lost.
func TestChangeTagsThatFailsKeepsTheOldRecord(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	_, id := repoWithSnapshot(t, be)
	r := openRepo(t, failingSave{be})
	if _, err := r.ChangeTags(ctx, selectIDs(id), repo.TagChange{Add: []string{"x"}}); err == nil {
		t.Fatal("no error from a failed save")
	}
	s, err := openRepo(t, be).LoadSnapshot(ctx, id)
	if err != nil {
		t.Fatalf("snapshot after a failed tag change: %v", err)
	}
	if len(s.Tags) != 0 {
		t.Errorf("tags = %q, want the old (none)", s.Tags)
	}
}

// ChangeTags takes the exclusive lock, as forget: beside a backup it fails
// at once with ErrBusy and changes nothing; a snapshot an interrupted
// forget marked is left alone, and one that does not exist fails.
func TestChangeTagsLocksAndSkips(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r, id := repoWithSnapshot(t, be)
	other := openRepo(t, be)
	lock, err := other.Lock(ctx, false, "backup")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ChangeTags(ctx, selectIDs(id), repo.TagChange{Add: []string{"x"}}); !errors.Is(err, repo.ErrBusy) {
		t.Errorf("beside a backup: %v, want ErrBusy", err)
	}
	lock.Unlock()

	store(t, be, repo.Handle{Type: repo.ForgetFile, Name: id}, []byte("mark"))
	res, err := r.ChangeTags(ctx, selectIDs(id), repo.TagChange{Add: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Forgetting, []string{id}) || len(res.Changed) != 0 {
		t.Errorf("marked snapshot: %+v, want it left alone as being forgotten", res)
	}
	if s, _ := r.LoadSnapshot(ctx, id); s == nil || len(s.Tags) != 0 {
		t.Errorf("marked snapshot's tags changed: %+v", s)
	}

	missing := repo.NewSnapshotID()
	if _, err := r.ChangeTags(ctx, selectIDs(missing), repo.TagChange{Add: []string{"x"}}); !errors.Is(err, repo.ErrSnapshotNotFound) {
		t.Errorf("unknown snapshot: %v, want ErrSnapshotNotFound", err)
	}
}

// A tag change keeps every other field of the record exactly, also one
// this version does not know (written by a newer one).
func TestChangeTagsKeepsUnknownFields(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r, id := repoWithSnapshot(t, be)
	plain, err := r.SnapshotJSON(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(plain, &fields); err != nil {
		t.Fatal(err)
	}
	fields["from_the_future"] = json.RawMessage(`{"x":[1,2]}`)
	plain, _ = json.Marshal(fields)
	if err := r.SaveSnapshotJSON(ctx, id, plain); err != nil {
		t.Fatal(err)
	}

	if _, err := r.ChangeTags(ctx, selectIDs(id), repo.TagChange{Add: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	got, err := r.SnapshotJSON(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var after map[string]json.RawMessage
	if err := json.Unmarshal(got, &after); err != nil {
		t.Fatal(err)
	}
	if string(after["tags"]) != `["a"]` {
		t.Errorf("tags = %s, want [\"a\"]", after["tags"])
	}
	delete(after, "tags")
	if len(after) != len(fields) {
		t.Errorf("fields after %d, before %d", len(after), len(fields))
	}
	for k, v := range fields {
		if string(after[k]) != string(v) {
			t.Errorf("field %s = %s, was %s", k, after[k], v)
		}
	}
}
