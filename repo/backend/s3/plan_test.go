package s3_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
)

// planBudget is the read-ahead budget of the plan tests: spans of at most
// half of it, 512 KiB.
const planBudget = 1 << 20

// planOf is a plan of reads of one pack, each [offset, offset+length).
func planOf(name string, reads ...[2]int64) []repo.PackReads {
	pr := repo.PackReads{Pack: repo.Handle{Type: repo.PackFile, Name: name}}
	for _, r := range reads {
		pr.Reads = append(pr.Reads, repo.ReadRange{Offset: r[0], Length: r[1]})
	}
	return []repo.PackReads{pr}
}

// readOK reads n bytes of h at offset and fails t unless they are data's.
func readOK(t *testing.T, be *s3.Backend, h repo.Handle, data []byte, offset, n int64) {
	t.Helper()
	buf := make([]byte, n)
	if err := be.LoadInto(context.Background(), h, offset, buf); err != nil {
		t.Fatalf("read %d bytes at %d: %v", n, offset, err)
	}
	if !bytes.Equal(buf, data[offset:offset+n]) {
		t.Fatalf("read %d bytes at %d: bytes differ from the object's", n, offset)
	}
}

// Planned reads that lie together are one span, fetched whole with one
// GET at the first read of it (whatever its size beside the window's), in
// whatever order the reads come; reads far apart are two spans. No byte is
// fetched twice, and a span is let go when its last planned read is served.
func TestPlanFetchesEachSpanOnce(t *testing.T) {
	be, p := proxiedBackend(t)
	be.SetReadAhead(testWindow, planBudget)
	h := repo.Handle{Type: repo.PackFile, Name: packName('a')}
	data := savePack(t, be, h.Name, 3<<20)
	gets(p)
	// [0, 200K): three reads with gaps, one larger than a window, one
	// read twice; [2M, 2M+100K): two reads. 1.8 MiB apart: two spans.
	reads := [][2]int64{{0, 16 << 10}, {40 << 10, 100 << 10}, {180 << 10, 20 << 10}, {40 << 10, 100 << 10}, {2 << 20, 50 << 10}, {2<<20 + 50<<10, 50 << 10}}
	be.PlanReads(planOf(h.Name, reads...))
	for _, i := range []int{3, 4, 0, 5, 2, 1} {
		readOK(t, be, h, data, reads[i][0], reads[i][1])
	}
	c := p.Counts()
	if got := c.Requests[http.MethodGet]; got != 2 {
		t.Errorf("six planned reads in two spans: %d GETs, want 2", got)
	}
	if want := int64(200<<10 + 100<<10); c.BytesOut != want {
		t.Errorf("%d bytes fetched, want %d (the two spans, once each)", c.BytesOut, want)
	}
	if held := be.ReadAheadHeld(); held != 0 {
		t.Errorf("%d bytes held after every planned read was served, want 0", held)
	}
	if fetched, alone := be.PlanCounts(); fetched != 2 || alone != 0 {
		t.Errorf("planned spans: %d fetched, %d reads alone; want 2 and 0", fetched, alone)
	}
}

// A read the plan does not hold goes through a window as without a plan;
// the window stops where a planned span starts. Ending the plan lets go of
// its spans.
func TestPlanLeavesOtherReadsAlone(t *testing.T) {
	be, p := proxiedBackend(t)
	be.SetReadAhead(testWindow, planBudget)
	h := repo.Handle{Type: repo.PackFile, Name: packName('a')}
	data := savePack(t, be, h.Name, 300<<10)
	gets(p)
	be.PlanReads(planOf(h.Name, [2]int64{100 << 10, 10 << 10}, [2]int64{120 << 10, 10 << 10}))
	readOK(t, be, h, data, 0, 1<<10)
	readOK(t, be, h, data, 10<<10, 1<<10)
	if c := p.Counts(); c.Requests[http.MethodGet] != 1 || c.BytesOut != testWindow {
		t.Errorf("two reads before the plan's span: %d GETs of %d bytes, want 1 window of %d", c.Requests[http.MethodGet], c.BytesOut, testWindow)
	}
	p.ResetCounts()
	readOK(t, be, h, data, 70<<10, 2<<10)
	if c := p.Counts(); c.Requests[http.MethodGet] != 1 || c.BytesOut != 30<<10 {
		t.Errorf("a read just before the span: %d GETs of %d bytes, want 1 of %d (a window up to the span)", c.Requests[http.MethodGet], c.BytesOut, 30<<10)
	}
	p.ResetCounts()
	readOK(t, be, h, data, 100<<10, 10<<10)
	if held := be.ReadAheadHeld(); held != testWindow+60<<10 {
		t.Errorf("two windows and a span half read: %d bytes held, want %d", held, testWindow+60<<10)
	}
	be.PlanReads(nil)
	if held := be.ReadAheadHeld(); held != testWindow+30<<10 {
		t.Errorf("after the plan ended: %d bytes held, want the two windows' %d", held, testWindow+30<<10)
	}
	readOK(t, be, h, data, 120<<10, 10<<10)
	if c := p.Counts(); c.Requests[http.MethodGet] != 2 {
		t.Errorf("the span and a read of it after the plan ended: %d GETs, want 2", c.Requests[http.MethodGet])
	}
}

// Readers of a planned span being fetched wait for that fetch instead of
// making their own.
func TestPlanConcurrentReadersShareTheFetch(t *testing.T) {
	be, p := proxiedBackend(t)
	be.SetReadAhead(testWindow, planBudget)
	h := repo.Handle{Type: repo.PackFile, Name: packName('a')}
	data := savePack(t, be, h.Name, 400<<10)
	gets(p)
	const readers = 8
	var reads [][2]int64
	for i := range readers + 1 {
		reads = append(reads, [2]int64{int64(i) * 40 << 10, 30 << 10})
	}
	be.PlanReads(planOf(h.Name, reads...))

	release := make(chan struct{})
	held := make(chan struct{}, 1)
	p.SetRules(faultproxy.Rule{Method: http.MethodGet, PathContains: "/data/", Times: 1, Fault: faultproxy.Delay, Release: release,
		OnFault: func(string, string) { held <- struct{}{} }})
	waiting := make(chan struct{}, readers)
	be.OnReadAheadWait(func() { waiting <- struct{}{} })
	errs := make(chan error, readers+1)
	read := func(r [2]int64) {
		buf := make([]byte, r[1])
		err := be.LoadInto(context.Background(), h, r[0], buf)
		if err == nil && !bytes.Equal(buf, data[r[0]:r[0]+r[1]]) {
			err = errors.New("bytes differ from the object's")
		}
		errs <- err
	}
	go read(reads[readers])
	<-held
	for _, r := range reads[:readers] {
		go read(r)
	}
	for waited := 0; waited < readers; {
		select {
		case <-waiting:
			waited++
		case err := <-errs:
			close(release)
			t.Fatalf("a reader finished while the span's fetch was held (%v): it did not wait for it", err)
		}
	}
	close(release)
	for range readers + 1 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := p.Counts().Requests[http.MethodGet]; got != 1 {
		t.Errorf("%d readers of one span: %d GETs, want 1", readers+1, got)
	}
	if held := be.ReadAheadHeld(); held != 0 {
		t.Errorf("%d bytes held after every planned read was served, want 0", held)
	}
}

// Spans never hold more than the budget, and none is dropped before its
// last planned read for a span of no more reads: a read whose span finds
// no room goes to the server alone (and is counted), and its span is
// fetched when there is room.
func TestPlanBudget(t *testing.T) {
	be, p := proxiedBackend(t)
	be.SetReadAhead(testWindow, planBudget)
	names := []string{packName('a'), packName('b'), packName('c')}
	data := map[string][]byte{}
	var plan []repo.PackReads
	for i, n := range names {
		data[n] = savePack(t, be, n, 400<<10)
		// One span of 400K each: three reads of the first two packs,
		// two of the third.
		reads := [][2]int64{{0, 10 << 10}, {200 << 10, 10 << 10}, {390 << 10, 10 << 10}}
		if i == 2 {
			reads = [][2]int64{reads[0], reads[2]}
		}
		plan = append(plan, planOf(n, reads...)...)
	}
	gets(p)
	be.PlanReads(plan)
	handle := func(n string) repo.Handle { return repo.Handle{Type: repo.PackFile, Name: n} }
	for _, n := range names {
		readOK(t, be, handle(n), data[n], 0, 10<<10)
		if held := be.ReadAheadHeld(); held > planBudget {
			t.Fatalf("spans hold %d bytes, more than the budget %d", held, planBudget)
		}
	}
	if fetched, alone := be.PlanCounts(); fetched != 2 || alone != 1 {
		t.Errorf("three spans of 400K in a budget of 1M: %d fetched, %d reads alone; want 2 and 1", fetched, alone)
	}
	if c := p.Counts(); c.Requests[http.MethodGet] != 3 || c.BytesOut != 810<<10 {
		t.Errorf("first reads of three spans: %d GETs of %d bytes, want 3 of %d (two spans, one read alone)", c.Requests[http.MethodGet], c.BytesOut, 810<<10)
	}
	p.ResetCounts()
	for _, n := range names[:2] {
		readOK(t, be, handle(n), data[n], 200<<10, 10<<10)
		readOK(t, be, handle(n), data[n], 390<<10, 10<<10)
	}
	if got := gets(p); got != 0 {
		t.Errorf("last reads of the two spans held: %d GETs, want 0", got)
	}
	if held := be.ReadAheadHeld(); held != 0 {
		t.Errorf("%d bytes held after the two spans' reads were served, want 0", held)
	}
	readOK(t, be, handle(names[2]), data[names[2]], 390<<10, 10<<10)
	if got := gets(p); got != 1 {
		t.Errorf("the last read of the third span, with room now: %d GETs, want 1", got)
	}
	if fetched, _ := be.PlanCounts(); fetched != 3 {
		t.Errorf("spans fetched: %d, want 3", fetched)
	}
	if held := be.ReadAheadHeld(); held != 0 {
		t.Errorf("%d bytes held after every planned read was served, want 0", held)
	}
}

// A span that more planned reads will use than a held one still has takes
// its room: the held span with the fewest reads to come, least recently
// used first, is dropped, and its last read goes through a window.
func TestPlanDropsSpanNearlyRead(t *testing.T) {
	be, p := proxiedBackend(t)
	be.SetReadAhead(testWindow, planBudget)
	names := []string{packName('a'), packName('b'), packName('c')}
	data := map[string][]byte{}
	var plan []repo.PackReads
	for i, n := range names {
		data[n] = savePack(t, be, n, 400<<10)
		// One span of 400K each: two reads of the first two packs, three
		// of the third.
		reads := [][2]int64{{0, 10 << 10}, {390 << 10, 10 << 10}}
		if i == 2 {
			reads = [][2]int64{reads[0], {200 << 10, 10 << 10}, reads[1]}
		}
		plan = append(plan, planOf(n, reads...)...)
	}
	gets(p)
	be.PlanReads(plan)
	handle := func(n string) repo.Handle { return repo.Handle{Type: repo.PackFile, Name: n} }
	for _, n := range names {
		readOK(t, be, handle(n), data[n], 0, 10<<10)
		if held := be.ReadAheadHeld(); held > planBudget {
			t.Fatalf("spans hold %d bytes, more than the budget %d", held, planBudget)
		}
	}
	if fetched, alone := be.PlanCounts(); fetched != 3 || alone != 0 || be.SpansDropped() != 1 {
		t.Errorf("a third span of more reads: %d fetched, %d reads alone, %d dropped; want 3, 0 and 1", fetched, alone, be.SpansDropped())
	}
	p.ResetCounts()
	readOK(t, be, handle(names[2]), data[names[2]], 200<<10, 10<<10)
	for _, n := range names {
		readOK(t, be, handle(n), data[n], 390<<10, 10<<10)
	}
	if c := p.Counts(); c.Requests[http.MethodGet] != 1 || c.BytesOut != 10<<10 {
		t.Errorf("the last reads: %d GETs of %d bytes, want 1 of %d (the dropped span's read, through a window to the pack's end)", c.Requests[http.MethodGet], c.BytesOut, 10<<10)
	}
}

// A fetch of a span that fails is not kept: the reader that waited for it
// reads on its own, and the next read of the span fetches it anew, whole.
func TestPlanFailedFetchIsRetried(t *testing.T) {
	be, p := proxiedBackend(t)
	be.SetReadAhead(testWindow, planBudget)
	h := repo.Handle{Type: repo.PackFile, Name: packName('a')}
	data := savePack(t, be, h.Name, 300<<10)
	gets(p)
	be.PlanReads(planOf(h.Name, [2]int64{0, 10 << 10}, [2]int64{100 << 10, 10 << 10}, [2]int64{200 << 10, 10 << 10}))

	buf := make([]byte, 10<<10)
	secondErr := waitOnFailedFetch(t, be, p, h, 10<<10, 100<<10, buf)
	if err := secondErr; err != nil || !bytes.Equal(buf, data[100<<10:110<<10]) {
		t.Fatalf("the waiting read after the fetch failed: %v, or bytes differ", err)
	}
	p.ResetCounts()
	readOK(t, be, h, data, 200<<10, 10<<10)
	if c := p.Counts(); c.Requests[http.MethodGet] != 1 || c.BytesOut != 210<<10 {
		t.Errorf("a read of the span after its fetch failed: %d GETs of %d bytes, want 1 of %d (the span whole)", c.Requests[http.MethodGet], c.BytesOut, 210<<10)
	}
	if fetched, _ := be.PlanCounts(); fetched != 2 {
		t.Errorf("spans fetched: %d, want 2 (the failed fetch and the one after)", fetched)
	}
	if held := be.ReadAheadHeld(); held != 0 {
		t.Errorf("%d bytes held after the last planned read was served, want 0", held)
	}
}
