package jobs

import (
	"time"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// reportDuring reports, every ProgressEvery while a source is backed up,
// the run's figures so far: done (the sources before it) plus what the
// backup's prog has counted (files done, bytes read, bytes added, entries
// skipped), with current as what the run works on. It returns stop, which
// ends the reports and waits, so that none comes after it (the executor
// reports one at a time, and never after Execute returns). Without
// ProgressEvery it reports nothing.
func (e *Executor) reportDuring(progress func(pass.Progress), done pass.Figures, current string, prog *backup.Progress) (stop func()) {
	ticks, stopTicker := e.progressTicks()
	if ticks == nil {
		return func() {}
	}
	quit, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		defer stopTicker()
		for {
			select {
			case <-quit:
				return
			case <-ticks:
			}
			f := prog.Read()
			fig := done.Clone()
			fig.BytesRead += f.BytesRead
			fig.BytesAdded += f.BytesAdded
			fig.Files += f.FilesDone
			fig.FilesSkipped += f.Skipped
			progress(pass.Progress{Figures: fig, Current: current})
		}
	}()
	return func() {
		close(quit)
		<-ended
	}
}

// progressTicks returns the ticker of the reports during a source: the
// test's, or one of ProgressEvery; nil when there is none.
func (e *Executor) progressTicks() (<-chan time.Time, func()) {
	if e.progressTicker != nil {
		return e.progressTicker()
	}
	if e.ProgressEvery <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(e.ProgressEvery)
	return t.C, t.Stop
}
