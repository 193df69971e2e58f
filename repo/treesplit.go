package repo

import "github.com/nightjar-backup/nightjar/repo/chunker"

// Big trees are cut into parts where a rolling hash of their JSON says so,
// with a rule that looks only at the bytes before a cut (chunker.LocalRule):
// about every 4 KiB, at least 256 bytes and at most 64 KiB a part. Its gear
// table is derived from the chunker key over treeGearContext. Both are
// part of the repository format.
var treePartRule = chunker.LocalRule{Bits: 12, Min: 256, Max: 64 << 10}

const treeGearContext = "nightjar tree parts v1"

// treeGear returns the gear table that cuts big trees into parts.
func (r *Repository) treeGear() *chunker.Gear {
	r.treeGearOnce.Do(func() { r.treeGearTable = chunker.NewGearFor(r.ChunkerKey(), treeGearContext) })
	return r.treeGearTable
}
