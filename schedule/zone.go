package schedule

import (
	"fmt"
	"math"
	"sort"
	"time"

	// The binary carries its own zone database, so a schedule means the same
	// thing on a minimal container as on a desktop.
	_ "time/tzdata"
)

// LoadLocation returns the IANA time zone name, UTC for "", and rejects the machine's local zone.
func LoadLocation(name string) (*time.Location, error) {
	switch name {
	case "", "UTC":
		return time.UTC, nil
	case "Local", "local":
		return nil, fmt.Errorf("time zone %q is the machine's own zone, which schedules never use: name an IANA zone such as \"Europe/Berlin\", or \"UTC\"", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: name an IANA zone such as \"Europe/Berlin\", or \"UTC\"", name)
	}
	return loc, nil
}

// A wall-clock reading is counted in "wall seconds": the seconds from
// 1970-01-01 00:00 to that reading on a clock that never changes its offset.
// An instant u, whose zone offset is o, shows the wall reading u+o.

// period is a stretch of instants [start, end) during which a zone keeps one
// offset. Unbounded ends are math.MinInt64 and math.MaxInt64.
type period struct {
	start, end int64
	offset     int64
}

// periodsBetween returns the zone periods of loc that overlap the instants
// [from, to], in order.
func periodsBetween(loc *time.Location, from, to int64) []period {
	var ps []period
	for t := from; ; {
		at := time.Unix(t, 0).In(loc)
		_, offset := at.Zone()
		start, end := at.ZoneBounds()
		p := period{start: math.MinInt64, end: math.MaxInt64, offset: int64(offset)}
		if !start.IsZero() {
			p.start = start.Unix()
		}
		if !end.IsZero() {
			p.end = end.Unix()
		}
		ps = append(ps, p)
		if p.end > to || p.end <= t {
			return ps
		}
		t = p.end
	}
}

// reading is how the clocks of a zone show one wall-clock reading.
type reading struct {
	instants []int64 // every instant showing it, in order: one, two in a fall-back overlap, none in a gap
	gapEnd   int64   // for a reading inside a spring-forward gap: the first instant after the gap
	inGap    bool
}

// read finds the instants at which a zone whose periods are ps shows the wall
// reading w. ps must cover every instant that could show w (26 hours either
// side is enough for every offset there is).
func read(ps []period, w int64) reading {
	var r reading
	for _, p := range ps {
		if u := w - p.offset; u >= p.start && u < p.end {
			r.instants = append(r.instants, u)
		}
	}
	if len(r.instants) > 1 {
		sort.Slice(r.instants, func(i, j int) bool { return r.instants[i] < r.instants[j] })
	}
	if len(r.instants) > 0 {
		return r
	}
	// No instant shows w: the clocks jumped over it at the boundary between
	// two periods, where the old offset puts w after the jump and the new
	// offset puts it before.
	for i := 0; i+1 < len(ps); i++ {
		jump := ps[i].end
		if w-ps[i].offset >= jump && w-ps[i+1].offset < jump {
			r.inGap, r.gapEnd = true, jump
			return r
		}
	}
	return r
}
