package jobs

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// While a source is backed up, the executor reports at each tick the
// figures of the sources before it plus what the backup counted so far,
// naming the source; stop ends the reports, and none comes after it.
func TestReportsDuringASource(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	// The counts of a real backup of one 5,000-byte file.
	prog := &backup.Progress{}
	if _, err := backup.Backup(context.Background(), repotest.New(t, memory.New()), backup.Options{Paths: []string{src}, Progress: prog}); err != nil {
		t.Fatal(err)
	}
	counted := prog.Read()

	ticks := make(chan time.Time)
	e := &Executor{progressTicker: func() (<-chan time.Time, func()) { return ticks, func() {} }}
	var mu sync.Mutex
	var got []pass.Progress
	report := func(p pass.Progress) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
	}
	before := pass.Figures{BytesRead: 100, BytesAdded: 10, Files: 2, FilesSkipped: 1,
		Skipped: []pass.Skipped{{Object: "/one/x", Reason: "permission denied"}}}
	stop := e.reportDuring(report, before, "source "+src, prog)
	ticks <- time.Time{}
	ticks <- time.Time{} // taken only once the first report is made
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("%d reports for 2 ticks: %+v", len(got), got)
	}
	for _, p := range got {
		f := p.Figures
		if p.Current != "source "+src || f.Files != 2+counted.FilesDone || f.BytesRead != 100+5000 ||
			f.BytesAdded != 10+counted.BytesAdded || f.FilesSkipped != 1 || len(f.Skipped) != 1 {
			t.Errorf("report %+v (current %q); want the sources before plus the backup's %+v, naming the source", f, p.Current, counted)
		}
	}
	if counted.FilesDone != 1 || counted.BytesAdded == 0 {
		t.Errorf("the backup counted %+v: want 1 file and bytes added", counted)
	}

	// Without ProgressEvery (and no test ticker) nothing is reported.
	none := (&Executor{}).reportDuring(func(pass.Progress) { t.Error("a report without ProgressEvery") }, before, "source "+src, prog)
	none()
}
