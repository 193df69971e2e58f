package repo

import "sync/atomic"

// Phases of a check, as CheckFigures.Phase names them.
const (
	CheckPhaseIndex     = "index"     // listing packs, reading and checking the index
	CheckPhaseReadData  = "read data" // reading the selected packs whole
	CheckPhaseSnapshots = "snapshots" // walking every snapshot's trees
)

// CheckProgress holds the running figures of a check, for whoever shows
// them while it runs: the phase, and the packs and bytes read of those
// selected for reading (CheckOptions.ReadDataFraction or ReadDataSubset).
// The check only adds to atomic counters (one add per pack); Read may be
// called at any time from any goroutine. A CheckProgress serves one check.
type CheckProgress struct {
	phase      atomic.Pointer[string]
	packsRead  atomic.Int64
	bytesRead  atomic.Int64
	packsTotal atomic.Int64
	bytesTotal atomic.Int64
}

// CheckFigures is one reading of a CheckProgress.
type CheckFigures struct {
	Phase      string // CheckPhase...; "" before the check starts
	PacksRead  int64  // packs read and checked so far
	BytesRead  int64  // their bytes
	PacksTotal int64  // packs selected for reading (known from the read-data phase on)
	BytesTotal int64  // their bytes, from the pack sizes listed
}

// Read returns the figures as they are now.
func (p *CheckProgress) Read() CheckFigures {
	f := CheckFigures{PacksRead: p.packsRead.Load(), BytesRead: p.bytesRead.Load(),
		PacksTotal: p.packsTotal.Load(), BytesTotal: p.bytesTotal.Load()}
	if ph := p.phase.Load(); ph != nil {
		f.Phase = *ph
	}
	return f
}

// enter records the phase the check is in; nil p records nothing.
func (p *CheckProgress) enter(phase string) {
	if p != nil {
		p.phase.Store(&phase)
	}
}

// selected records the packs chosen for reading and their sizes.
func (p *CheckProgress) selected(packSizes map[ID]int64, selected map[ID]bool) {
	if p == nil {
		return
	}
	var bytes int64
	for id := range selected {
		bytes += packSizes[id]
	}
	p.bytesTotal.Store(bytes)
	p.packsTotal.Store(int64(len(selected)))
}

// read counts one pack read.
func (p *CheckProgress) read(size int64) {
	if p != nil {
		p.packsRead.Add(1)
		p.bytesRead.Add(size)
	}
}
