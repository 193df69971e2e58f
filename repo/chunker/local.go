package chunker

// LocalRule is a cut rule that looks only at the bytes before a cut: a
// part ends after a byte where the gear hash of the 64 bytes up to it has
// its top Bits bits zero, once the part has Min bytes, and always at Max
// bytes. Chunker's rule tests a mask that depends on the distance from the
// last cut, so a part that grows or shrinks can move several cuts after
// it; this rule moves at most the cut next to a change, which suits small
// structured data (trees) better. The hash is never reset at a cut.
type LocalRule struct {
	Bits     int
	Min, Max int
}

// Split calls fn with each part of data, in order, cut by rule with gear
// table g.
func (rule LocalRule) Split(data []byte, g *Gear, fn func(part []byte) error) error {
	start := 0
	var h uint64
	shift := 64 - rule.Bits
	for i, b := range data {
		h = h<<1 + g.table[b]
		n := i + 1 - start
		if (n >= rule.Min && h>>shift == 0) || n == rule.Max {
			if err := fn(data[start : i+1]); err != nil {
				return err
			}
			start = i + 1
		}
	}
	if start < len(data) {
		return fn(data[start:])
	}
	return nil
}
