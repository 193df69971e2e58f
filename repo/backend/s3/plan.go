package s3

import (
	"cmp"
	"slices"

	"github.com/nightjar-backup/nightjar/repo"
)

// A restore knows, before its file workers start, every range of every
// pack it will read (repo.ReadPlan). Through the read-ahead's windows those
// reads cost a GET for each window that a miss starts, at several offsets
// of one pack as several workers read it. With the plan, the read-ahead
// fetches the ranges of a pack that lie together as one span with one GET
// at its first miss, serves every planned read of it from memory, and
// drops it when the last one was served.
const (
	// planGap is the most bytes between two planned reads of a pack that
	// one span fetches and throws away rather than make two requests:
	// a request costs about what this many bytes do.
	planGap = 1 << 20
)

// planSpan is a range of an object that planned reads lie in, and how many
// of them.
type planSpan struct {
	offset, length int64
	reads          int
}

// PlanReads makes the read-ahead fetch the planned reads of each pack as
// spans, one GET each (see repo.ReadPlanner); nil ends the plan and drops
// the spans still held for it.
func (b *Backend) PlanReads(plan []repo.PackReads) {
	spans := make(map[string][]planSpan, len(plan))
	for _, p := range plan {
		key, err := b.key(p.Pack)
		if err != nil {
			continue // a name the backend refuses: its reads fail alone
		}
		spans[key] = planSpans(p.Reads, planGap, b.readAhead.budget/2)
	}
	b.readAhead.setPlan(spans)
}

// planSpans groups reads into spans: reads that overlap or lie at most gap
// apart share one, as long as it stays within most bytes (a read longer
// than that is a span of its own).
func planSpans(reads []repo.ReadRange, gap, most int64) []planSpan {
	reads = slices.Clone(reads)
	slices.SortFunc(reads, func(a, b repo.ReadRange) int { return cmp.Compare(a.Offset, b.Offset) })
	var spans []planSpan
	for _, rd := range reads {
		end := rd.Offset + rd.Length
		if n := len(spans); n > 0 {
			s := &spans[n-1]
			sEnd := s.offset + s.length
			if rd.Offset <= sEnd+gap && max(end, sEnd)-s.offset <= most {
				s.length = max(end, sEnd) - s.offset
				s.reads++
				continue
			}
		}
		spans = append(spans, planSpan{offset: rd.Offset, length: rd.Length, reads: 1})
	}
	return spans
}

// setPlan replaces the plan; the windows of the plan before are dropped,
// as only its reads needed them.
func (r *readAhead) setPlan(plan map[string][]planSpan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ws := range r.byKey {
		for _, w := range slices.Clone(ws) {
			if w.planned {
				r.drop(w)
			}
		}
	}
	r.plan = plan
}

// plannedSpan returns the span of key not yet fetched that holds the n
// bytes at offset. r.mu is held.
func (r *readAhead) plannedSpan(key string, offset, n int64) (planSpan, bool) {
	for _, s := range r.plan[key] {
		if offset >= s.offset && offset+n <= s.offset+s.length {
			return s, true
		}
	}
	return planSpan{}, false
}

// startSpan reserves a window for the planned span s of key and takes s
// out of the plan; nil when the windows being fetched leave no room (the
// read then goes to the server alone, and s stays planned). r.mu is held.
func (r *readAhead) startSpan(key string, s planSpan) *raWindow {
	if !r.makeRoom(s.length, s.reads) {
		return nil
	}
	spans := r.plan[key]
	for i, o := range spans {
		if o.offset == s.offset {
			spans = slices.Delete(spans, i, i+1)
			break
		}
	}
	if len(spans) == 0 {
		delete(r.plan, key)
	} else {
		r.plan[key] = spans
	}
	w := &raWindow{key: key, offset: s.offset, done: make(chan struct{}), reserve: s.length, planned: true, pending: s.reads}
	r.used += w.reserve
	r.byKey[key] = append(r.byKey[key], w)
	r.spansFetched++
	return w
}

// makeRoom drops the least recently used ready windows until length more
// bytes fit the budget, for a window or span that reads reads will use;
// false when the windows being fetched, and the planned spans whose reads
// are still to come, leave too little. A span is dropped before its last
// planned read only for a span that more reads will use than it still
// has (the one with the fewest, least recently used first): its reads
// then go through windows, where each costs at most a request, while
// each read of a span that finds no room costs one (a restore's small
// files spread over the walk can keep a few spans waiting for a few
// reads each, long after the rest of them was read; were spans of
// equal worth dropped for each other, each would be fetched again, over
// and over). r.mu is held.
func (r *readAhead) makeRoom(length int64, reads int) bool {
	for r.used+length > r.budget {
		var victim, cheapest *raWindow
		for e := r.lru.Back(); e != nil; e = e.Prev() {
			w := e.Value.(*raWindow)
			if !w.planned || w.pending <= 0 {
				victim = w
				break
			}
			if cheapest == nil || w.pending < cheapest.pending {
				cheapest = w
			}
		}
		if victim == nil && cheapest != nil && cheapest.pending < reads {
			victim = cheapest
			r.spansDropped++
		}
		if victim == nil {
			return false
		}
		r.drop(victim)
	}
	return true
}

// unplanOne takes a read of span s of key out of the plan: it went to the
// server on its own, as there was no room to fetch s. r.mu is held.
func (r *readAhead) unplanOne(key string, s planSpan) {
	r.spansDeferred++
	spans := r.plan[key]
	for i := range spans {
		if spans[i].offset == s.offset {
			spans[i].reads--
			if spans[i].reads <= 0 {
				spans = slices.Delete(spans, i, i+1)
			}
			break
		}
	}
	if len(spans) == 0 {
		delete(r.plan, key)
	} else {
		r.plan[key] = spans
	}
}

// replan puts span s of key back in the plan. r.mu is held.
func (r *readAhead) replan(key string, s planSpan) {
	if r.plan == nil {
		return // the plan ended meanwhile
	}
	spans := append(r.plan[key], s)
	slices.SortFunc(spans, func(a, b planSpan) int { return cmp.Compare(a.offset, b.offset) })
	r.plan[key] = spans
}

// served counts a read that w answered: a planned span is dropped when
// the last of its planned reads was served.
func (r *readAhead) served(w *raWindow) {
	if !w.planned {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w.pending--
	if w.pending <= 0 {
		r.drop(w)
	}
}

// planCounts returns the planned spans fetched, the planned reads that
// went to the server alone for want of room, and the spans dropped before
// their last planned read, for tests and measurements.
func (r *readAhead) planCounts() (fetched, alone, dropped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spansFetched, r.spansDeferred, r.spansDropped
}
