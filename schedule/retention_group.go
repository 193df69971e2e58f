package schedule

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// GroupBy says which of a snapshot's host, paths and tags set it apart for
// retention (restic's --group-by); the zero value puts all snapshots in one group.
type GroupBy struct {
	Host, Paths, Tags bool
}

// DefaultGroupBy is restic's default grouping: by host and paths.
var DefaultGroupBy = GroupBy{Host: true, Paths: true}

// ParseGroupBy reads a --group-by value: a comma-separated list of host, paths
// and tags, or "" for one group of every snapshot.
func ParseGroupBy(text string) (GroupBy, error) {
	var by GroupBy
	if strings.TrimSpace(text) == "" {
		return by, nil
	}
	for _, word := range strings.Split(text, ",") {
		var field *bool
		switch strings.TrimSpace(word) {
		case "host":
			field = &by.Host
		case "paths":
			field = &by.Paths
		case "tags":
			field = &by.Tags
		default:
			return GroupBy{}, fmt.Errorf("group-by %q: %q is not a field: use host, paths and tags separated by commas, or an empty value for one group", text, strings.TrimSpace(word))
		}
		if *field {
			return GroupBy{}, fmt.Errorf("group-by %q names %s twice", text, strings.TrimSpace(word))
		}
		*field = true
	}
	return by, nil
}

// String writes the grouping as ParseGroupBy reads it ("host,paths").
func (by GroupBy) String() string {
	var fields []string
	if by.Host {
		fields = append(fields, "host")
	}
	if by.Paths {
		fields = append(fields, "paths")
	}
	if by.Tags {
		fields = append(fields, "tags")
	}
	return strings.Join(fields, ",")
}

// SnapshotGroup is the snapshots that share a key; retention decides each group on its own.
type SnapshotGroup struct {
	Key       string // printable, such as `host "db1" paths ["/etc" "/var/lib"]`; "" when nothing is grouped by
	Snapshots []RetentionSnapshot
}

// GroupSnapshots puts the snapshots into groups by the fields by names; the
// order of paths and of tags does not matter. Groups come ordered by key,
// snapshots in a group in their order of the input.
func GroupSnapshots(snapshots []RetentionSnapshot, by GroupBy) []SnapshotGroup {
	index := map[string]int{}
	var groups []SnapshotGroup
	for _, s := range snapshots {
		key := by.key(s)
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, SnapshotGroup{Key: key})
		}
		groups[i].Snapshots = append(groups[i].Snapshots, s)
	}
	slices.SortFunc(groups, func(a, b SnapshotGroup) int { return strings.Compare(a.Key, b.Key) })
	return groups
}

func (by GroupBy) key(s RetentionSnapshot) string {
	var parts []string
	if by.Host {
		parts = append(parts, "host "+strconv.Quote(s.Host))
	}
	if by.Paths {
		parts = append(parts, "paths "+quotedSet(s.Paths))
	}
	if by.Tags {
		parts = append(parts, "tags "+quotedSet(s.Tags))
	}
	return strings.Join(parts, " ")
}

// quotedSet writes a set of strings sorted and de-duplicated, each quoted: ["a" "b"].
func quotedSet(values []string) string {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	quoted := make([]string, len(sorted))
	for i, v := range sorted {
		quoted[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(quoted, " ") + "]"
}

// GroupDecisions is the decisions on the snapshots of one group.
type GroupDecisions struct {
	Key       string
	Decisions []RetentionDecision
}

// DecideRetentionGroups groups the snapshots and decides each group on its own with
// the same policy and zone; the result is the union of the groups' decisions.
func DecideRetentionGroups(snapshots []RetentionSnapshot, by GroupBy, p RetentionPolicy, loc *time.Location) ([]GroupDecisions, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if loc == nil {
		return nil, errNoZone
	}
	var result []GroupDecisions
	for _, g := range GroupSnapshots(snapshots, by) {
		decisions, err := DecideRetention(g.Snapshots, p, loc)
		if err != nil {
			return nil, err
		}
		result = append(result, GroupDecisions{Key: g.Key, Decisions: decisions})
	}
	return result, nil
}
