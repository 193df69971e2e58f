package restore

import (
	"context"
	"errors"
	"testing"
)

// When parts of one restored file fail in different ways, damage to the
// repository is what the file reports, whichever came first: the file is
// then counted as damage, which the restore's error reports, where a local
// error would only skip it.
func TestRestoreDamageOutranksALocalError(t *testing.T) {
	local := errors.New("write: no space left on device")
	damage := &damageError{errors.New("restore f: blob abc: integrity check failed")}
	for _, order := range [][]error{{local, damage}, {damage, local}} {
		f := &pendingFile{}
		f.parts.Store(3) // parts still to come: nothing is finished yet
		var rs restorer
		for _, err := range order {
			rs.finishPart(context.Background(), filePart{file: f}, err)
		}
		if f.err != damage {
			t.Errorf("errors %v in this order: the file reports %v, want the damage", order, f.err)
		}
	}
}
