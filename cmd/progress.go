package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/restore"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// How often the progress line is redrawn, and how often backup --json and
// restore --json print a status object (the first after one interval, so
// that a short backup or restore prints none).
const (
	progressLineEvery   = 250 * time.Millisecond
	progressStatusEvery = time.Second
)

// quietFlag is --quiet of the commands that show progress.
func quietFlag() cli.Flag {
	return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "show no progress and no summary, only warnings and errors (--json still prints its summary)"}
}

// progressFigures is one reading of a running command, in the terms its
// progress line shows.
type progressFigures struct {
	Phase      string // said first when set, such as "verifying"
	Unit       string // what Done and Total count ("files", "packs"); "": no counts, only the phase
	Done       int64
	Total      int64 // with TotalKnown
	Bytes      int64
	TotalBytes int64 // with TotalKnown
	TotalKnown bool
	Skipped    int64 // entries that could not be handled so far
	Elapsed    time.Duration
}

// fraction returns how much of the total is done, in [0, 1], by bytes
// (by count when there are no bytes to count); ok is false while the
// total is not known.
func (f progressFigures) fraction() (float64, bool) {
	if !f.TotalKnown || f.Unit == "" {
		return 0, false
	}
	done, total := f.Bytes, f.TotalBytes
	if total <= 0 {
		done, total = f.Done, f.Total
	}
	if total <= 0 {
		return 1, true
	}
	return min(float64(done)/float64(total), 1), true
}

// remaining estimates the time left from the average rate so far; ok is
// false while it cannot be known (no total, nothing done yet).
func (f progressFigures) remaining() (time.Duration, bool) {
	frac, ok := f.fraction()
	if !ok || frac <= 0 || f.Elapsed <= 0 {
		return 0, false
	}
	if frac >= 1 {
		return 0, true
	}
	return time.Duration(float64(f.Elapsed) * (1 - frac) / frac), true
}

// progressLine is what the progress line says for f, cut to width
// characters (0: not cut): elapsed time, percentage and ETA where the
// total is known, counts and bytes done of the total, the average rate:
//
//	[1:02] 45.2%  1,234 of 5,000 files, 2.1 GiB of 4.6 GiB, 34 MiB/s, ETA 1:15
func progressLine(f progressFigures, width int) string {
	var b strings.Builder
	b.WriteString("[" + elapsedClock(f.Elapsed) + "]")
	if f.Phase != "" {
		b.WriteString(" " + f.Phase)
	}
	if f.Unit != "" {
		frac, known := f.fraction()
		if known {
			fmt.Fprintf(&b, " %.1f%% ", 100*frac)
		}
		b.WriteString(" " + humanize.Comma(f.Done))
		if known {
			b.WriteString(" of " + humanize.Comma(f.Total))
		}
		b.WriteString(" " + f.Unit + ", " + humanize.IBytes(uint64(max(f.Bytes, 0))))
		if known {
			b.WriteString(" of " + humanize.IBytes(uint64(max(f.TotalBytes, 0))))
		}
		if secs := f.Elapsed.Seconds(); secs > 0 && f.Bytes > 0 {
			b.WriteString(", " + humanize.IBytes(uint64(float64(f.Bytes)/secs)) + "/s")
		}
		if f.Skipped > 0 {
			fmt.Fprintf(&b, ", %s skipped", humanize.Comma(f.Skipped))
		}
		if left, ok := f.remaining(); ok && frac < 1 {
			b.WriteString(", ETA " + elapsedClock(left))
		}
	}
	line := b.String()
	if width > 0 && utf8.RuneCountInString(line) > width {
		line = string([]rune(line)[:width])
	}
	return line
}

// elapsedClock writes d as m:ss, or h:mm:ss from an hour on.
func elapsedClock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// progressReporter calls its draw function on every tick of a ticker and
// once more, with final set, when stopped; nothing is drawn after Stop
// returns. A nil reporter draws nothing.
type progressReporter struct {
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// startProgress draws on every value from ticks until Stop; stopTicker (may
// be nil) is called when it ends. Tests hand it a channel of their own.
func startProgress(ticks <-chan time.Time, stopTicker func(), draw func(final bool)) *progressReporter {
	r := &progressReporter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if stopTicker != nil {
			defer stopTicker()
		}
		for {
			select {
			case <-r.stop:
				draw(true)
				return
			case <-ticks:
				draw(false)
			}
		}
	}()
	return r
}

// Stop draws the final state and waits until the reporter has ended.
func (r *progressReporter) Stop() {
	if r == nil {
		return
	}
	r.stopOnce.Do(func() { close(r.stop) })
	<-r.done
}

// startTicking starts a reporter on a real ticker of every.
func startTicking(every time.Duration, draw func(final bool)) *progressReporter {
	t := time.NewTicker(every)
	return startProgress(t.C, t.Stop, draw)
}

// terminalWidth returns the width of w when it is a terminal; ok is false
// when it is not one (a file, a pipe), where no progress line is drawn.
func terminalWidth(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0, false
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width <= 0 {
		width = 80
	}
	return width, true
}

// lineDrawer returns a draw function that redraws one line in place on
// out: carriage return, the line, clear to the end of the line; the final
// state is drawn once more and ended with a newline, so that the summary
// follows below it.
func lineDrawer(out io.Writer, width int, read func() progressFigures) func(final bool) {
	return func(final bool) {
		// One column short of the width: a line that fills it would
		// make some terminals wrap, and the next \r would not return.
		line := "\r" + progressLine(read(), width-1) + "\x1b[K"
		if final {
			line += "\n"
		}
		fmt.Fprint(out, line)
	}
}

// startLine starts the progress line of a command on its stdout when that
// is a terminal and neither --json nor --quiet is given; else it returns
// nil, which draws nothing.
func startLine(c *cli.Context, p *printer, read func() progressFigures) *progressReporter {
	if p.jsonOut || c.Bool("quiet") {
		return nil
	}
	width, ok := terminalWidth(p.stdout)
	if !ok {
		return nil
	}
	return startTicking(progressLineEvery, lineDrawer(p.stdout, width, read))
}

// sinceStart returns the time since start on the real clock.
func sinceStart() func() time.Duration {
	start := time.Now()
	return func() time.Duration { return time.Since(start) }
}

// backupFigures reads a backup's progress for the line.
func backupFigures(prog *backup.Progress, elapsed func() time.Duration) func() progressFigures {
	return func() progressFigures {
		f := prog.Read()
		return progressFigures{Unit: "files", Done: f.FilesDone, Total: f.TotalFiles, Bytes: f.BytesDone,
			TotalBytes: f.TotalBytes, TotalKnown: f.TotalKnown, Skipped: f.Skipped, Elapsed: elapsed()}
	}
}

// restoreFigures reads a restore's progress for the line; while verify
// reads the files back, the line counts that.
func restoreFigures(prog *restore.Progress, elapsed func() time.Duration) func() progressFigures {
	return func() progressFigures {
		f := prog.Read()
		out := progressFigures{Unit: "files", Done: f.FilesDone, Total: f.TotalFiles, Bytes: f.BytesDone,
			TotalBytes: f.TotalBytes, TotalKnown: f.TotalKnown, Elapsed: elapsed()}
		if f.Verifying {
			out.Phase, out.Done, out.Bytes = "verifying", f.FilesVerified, f.BytesVerified
		}
		return out
	}
}

// checkFigures reads a check's progress for the line: its phase, and
// while (and after) packs are read, how many of those selected.
func checkFigures(prog *repo.CheckProgress, elapsed func() time.Duration) func() progressFigures {
	return func() progressFigures {
		f := prog.Read()
		out := progressFigures{Phase: "checking " + f.Phase, Elapsed: elapsed()}
		if f.Phase == repo.CheckPhaseReadData {
			out.Phase = "reading data"
		}
		if f.PacksTotal > 0 {
			out.Unit, out.Done, out.Total, out.Bytes, out.TotalBytes, out.TotalKnown = "packs", f.PacksRead, f.PacksTotal, f.BytesRead, f.BytesTotal, true
		}
		return out
	}
}

// backupStatusJSON is one status object of backup --json, as restic
// prints them: one line each, before the summary.
type backupStatusJSON struct {
	MessageType      string   `json:"message_type"` // "status"
	SecondsElapsed   int64    `json:"seconds_elapsed"`
	SecondsRemaining int64    `json:"seconds_remaining,omitempty"` // once the total is known
	PercentDone      float64  `json:"percent_done"`                // 0 to 1; 0 while the total is not known
	TotalFiles       int64    `json:"total_files,omitempty"`       // once the scan has counted every source
	FilesDone        int64    `json:"files_done"`
	TotalBytes       int64    `json:"total_bytes,omitempty"`
	BytesDone        int64    `json:"bytes_done"`
	ErrorCount       int64    `json:"error_count,omitempty"` // entries skipped so far
	CurrentFiles     []string `json:"current_files,omitempty"`
}

// backupStatus is the status object for one reading of a backup.
func backupStatus(f backup.ProgressFigures, elapsed time.Duration) backupStatusJSON {
	fig := progressFigures{Unit: "files", Done: f.FilesDone, Total: f.TotalFiles, Bytes: f.BytesDone,
		TotalBytes: f.TotalBytes, TotalKnown: f.TotalKnown, Elapsed: elapsed}
	out := backupStatusJSON{MessageType: "status", SecondsElapsed: int64(elapsed / time.Second),
		FilesDone: f.FilesDone, BytesDone: f.BytesDone, ErrorCount: f.Skipped, CurrentFiles: f.Current}
	if frac, ok := fig.fraction(); ok {
		out.PercentDone, out.TotalFiles, out.TotalBytes = frac, f.TotalFiles, f.TotalBytes
	}
	if left, ok := fig.remaining(); ok {
		out.SecondsRemaining = int64(left.Round(time.Second) / time.Second)
	}
	return out
}

// restoreStatusJSON is one status object of restore --json, as restic
// prints them: one line each, before the summary. restic's fields, and
// seconds_remaining and the verify figures more.
type restoreStatusJSON struct {
	MessageType      string  `json:"message_type"` // "status"
	SecondsElapsed   int64   `json:"seconds_elapsed"`
	SecondsRemaining int64   `json:"seconds_remaining,omitempty"` // once the total is known
	PercentDone      float64 `json:"percent_done"`                // 0 to 1, of the bytes; 0 while the total is not known
	TotalFiles       int64   `json:"total_files"`                 // 0 while not known
	FilesRestored    int64   `json:"files_restored"`
	FilesSkipped     int64   `json:"files_skipped"` // given up so far (each is named at the end)
	TotalBytes       int64   `json:"total_bytes"`
	BytesRestored    int64   `json:"bytes_restored"`
	BytesSkipped     int64   `json:"bytes_skipped"`
	Verifying        bool    `json:"verifying,omitempty"` // --verify reads the restored files back
	FilesVerified    int64   `json:"files_verified,omitempty"`
	BytesVerified    int64   `json:"bytes_verified,omitempty"`
}

// restoreStatus is the status object for one reading of a restore.
func restoreStatus(f restore.ProgressFigures, elapsed time.Duration) restoreStatusJSON {
	fig := progressFigures{Unit: "files", Done: f.FilesDone, Total: f.TotalFiles, Bytes: f.BytesDone,
		TotalBytes: f.TotalBytes, TotalKnown: f.TotalKnown, Elapsed: elapsed}
	out := restoreStatusJSON{MessageType: "status", SecondsElapsed: int64(elapsed / time.Second),
		FilesRestored: f.FilesDone - f.FilesSkipped, FilesSkipped: f.FilesSkipped,
		BytesRestored: f.BytesDone, BytesSkipped: f.BytesSkipped,
		Verifying: f.Verifying, FilesVerified: f.FilesVerified, BytesVerified: f.BytesVerified}
	if frac, ok := fig.fraction(); ok {
		out.PercentDone, out.TotalFiles, out.TotalBytes = frac, f.TotalFiles, f.TotalBytes
	}
	if left, ok := fig.remaining(); ok {
		out.SecondsRemaining = int64(left.Round(time.Second) / time.Second)
	}
	return out
}

// statusWriter returns a draw function that writes the status object
// status returns as one line of JSON on out at each tick, and nothing at
// the end (the summary follows).
func statusWriter(out io.Writer, status func() any) func(final bool) {
	return func(final bool) {
		if final {
			return
		}
		line, err := json.Marshal(status())
		if err != nil {
			return // cannot happen: the object is plain data
		}
		out.Write(append(line, '\n'))
	}
}

// errorJSON is one error object of backup --json and restore --json, as
// restic prints them on stderr: an entry that could not be saved or
// restored, and why.
type errorJSON struct {
	MessageType string `json:"message_type"` // "error"
	Error       struct {
		Message string `json:"message"`
	} `json:"error"`
	During string `json:"during"` // "backup" or "restore"
	Item   string `json:"item"`   // the entry's path
}

// reportSkips names every entry in skips on stderr, one line each: an
// error object with --json, else a warning that starts with what.
func reportSkips(p *printer, during, what string, skips []repo.Skip) {
	for _, s := range skips {
		if !p.jsonOut {
			p.Warnf("%s %s: %s", what, terminalSafe(s.Path), s.Reason)
			continue
		}
		e := errorJSON{MessageType: "error", During: during, Item: s.Path}
		e.Error.Message = p.redact(s.Reason)
		if line, err := json.Marshal(e); err == nil {
			p.stderr.Write(append(line, '\n'))
		}
	}
}

// startRestoreProgress starts what a restore shows while it runs: status
// objects with --json (not with --quiet), else the line on a terminal. It
// returns nil when nothing is shown.
func startRestoreProgress(c *cli.Context, p *printer, prog *restore.Progress) *progressReporter {
	elapsed := sinceStart()
	if p.jsonOut {
		if c.Bool("quiet") {
			return nil
		}
		return startTicking(progressStatusEvery, statusWriter(p.stdout, func() any {
			return restoreStatus(prog.Read(), elapsed())
		}))
	}
	return startLine(c, p, restoreFigures(prog, elapsed))
}

// startBackupProgress starts what a backup shows while it runs: status
// objects with --json (not with --quiet), else the line on a terminal. It
// returns nil when nothing is shown; scan says whether the sources should
// be counted for a total (only when something shows it).
func startBackupProgress(c *cli.Context, p *printer, prog *backup.Progress) (r *progressReporter, scan bool) {
	elapsed := sinceStart()
	if p.jsonOut {
		if c.Bool("quiet") {
			return nil, false
		}
		return startTicking(progressStatusEvery, statusWriter(p.stdout, func() any {
			return backupStatus(prog.Read(), elapsed())
		})), true
	}
	r = startLine(c, p, backupFigures(prog, elapsed))
	return r, r != nil
}

// runningProgress says how far a running run got, from the figures its
// last heartbeat stored: "1,234 files, 2.1 GiB read, 120 MiB added so far
// (source /data)" for a backup; other kinds say their counters.
func runningProgress(r pass.Run) string {
	f := r.Figures
	if r.Current == "" && f.Files == 0 && f.BytesRead == 0 && f.BytesAdded == 0 && len(f.Counters) == 0 {
		return "no progress reported yet"
	}
	var parts []string
	if r.Kind == pass.KindBackup || r.Kind == "" {
		parts = append(parts, humanize.Comma(f.Files)+" files", humanize.IBytes(uint64(max(f.BytesRead, 0)))+" read",
			humanize.IBytes(uint64(max(f.BytesAdded, 0)))+" added")
	}
	// Other kinds count in their named counters.
	for _, name := range slices.Sorted(maps.Keys(f.Counters)) {
		parts = append(parts, humanize.Comma(f.Counters[name])+" "+name)
	}
	if f.FilesSkipped > 0 {
		parts = append(parts, humanize.Comma(f.FilesSkipped)+" skipped")
	}
	out := strings.Join(parts, ", ") + " so far"
	if len(parts) == 0 {
		out = "no figures yet"
	}
	if r.Current != "" {
		out += " (" + r.Current + ")"
	}
	return out
}
