package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// What the progress line says for given figures.
func TestProgressLine(t *testing.T) {
	cases := []struct {
		name  string
		f     progressFigures
		width int
		want  string
	}{
		{
			name: "total known: percentage, of the total, rate and ETA",
			f:    progressFigures{Unit: "files", Done: 1234, Total: 5000, Bytes: gib, TotalBytes: 4 * gib, TotalKnown: true, Elapsed: 64 * time.Second},
			want: "[1:04] 25.0%  1,234 of 5,000 files, 1.0 GiB of 4.0 GiB, 16 MiB/s, ETA 3:12",
		},
		{
			name: "total not known yet: no percentage and no ETA",
			f:    progressFigures{Unit: "files", Done: 12, Bytes: 3 * mib, Elapsed: 3 * time.Second},
			want: "[0:03] 12 files, 3.0 MiB, 1.0 MiB/s",
		},
		{
			name: "the very start: nothing done, no rate",
			f:    progressFigures{Unit: "files", Total: 10, TotalBytes: 10 * kib, TotalKnown: true},
			want: "[0:00] 0.0%  0 of 10 files, 0 B of 10 KiB",
		},
		{
			name: "skipped entries are counted",
			f:    progressFigures{Unit: "files", Done: 7, Bytes: 7 * kib, Skipped: 2, Elapsed: time.Second},
			want: "[0:01] 7 files, 7.0 KiB, 7.0 KiB/s, 2 skipped",
		},
		{
			name: "done: 100% and no ETA",
			f:    progressFigures{Unit: "files", Done: 3, Total: 3, Bytes: mib, TotalBytes: mib, TotalKnown: true, Elapsed: 2 * time.Second},
			want: "[0:02] 100.0%  3 of 3 files, 1.0 MiB of 1.0 MiB, 512 KiB/s",
		},
		{
			name: "files without bytes: the percentage counts files",
			f:    progressFigures{Unit: "files", Done: 1, Total: 4, TotalKnown: true, Elapsed: time.Second},
			want: "[0:01] 25.0%  1 of 4 files, 0 B of 0 B, ETA 0:03",
		},
		{
			name: "over an hour",
			f:    progressFigures{Unit: "packs", Done: 10, Total: 40, Bytes: 10 * mib, TotalBytes: 40 * mib, TotalKnown: true, Elapsed: time.Hour + 2*time.Minute + 3*time.Second},
			want: "[1:02:03] 25.0%  10 of 40 packs, 10 MiB of 40 MiB, 2.8 KiB/s, ETA 3:06:09",
		},
		{
			name: "a phase without counts",
			f:    progressFigures{Phase: "checking index", Elapsed: 5 * time.Second},
			want: "[0:05] checking index",
		},
		{
			name: "a phase with counts",
			f:    progressFigures{Phase: "verifying", Unit: "files", Done: 2, Total: 4, Bytes: mib, TotalBytes: 2 * mib, TotalKnown: true, Elapsed: time.Second},
			want: "[0:01] verifying 50.0%  2 of 4 files, 1.0 MiB of 2.0 MiB, 1.0 MiB/s, ETA 0:01",
		},
		{
			name:  "cut to the terminal's width",
			f:     progressFigures{Unit: "files", Done: 12, Bytes: 3 * mib, Elapsed: 3 * time.Second},
			width: 16,
			want:  "[0:03] 12 files,",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := progressLine(tc.f, tc.width); got != tc.want {
				t.Errorf("progressLine\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The reporter draws once per tick, in order, and the final state once
// when stopped; nothing after Stop returns. Ticks are sent by the test:
// an unbuffered send returns only once the reporter took it.
func TestProgressReporterDrawsPerTickAndOnStop(t *testing.T) {
	ticks := make(chan time.Time)
	readings := []progressFigures{
		{Unit: "files", Done: 1, Bytes: kib, Elapsed: time.Second},
		{Unit: "files", Done: 2, Bytes: 2 * kib, Elapsed: 2 * time.Second},
		{Unit: "files", Done: 3, Total: 3, Bytes: 3 * kib, TotalBytes: 3 * kib, TotalKnown: true, Elapsed: 3 * time.Second},
	}
	next := 0
	read := func() progressFigures { f := readings[next]; next++; return f }
	var out bytes.Buffer
	tickerStopped := false
	r := startProgress(ticks, func() { tickerStopped = true }, lineDrawer(&out, 200, read))
	ticks <- time.Time{}
	ticks <- time.Time{}
	r.Stop()
	r.Stop() // a second Stop is harmless
	want := "\r[0:01] 1 files, 1.0 KiB, 1.0 KiB/s\x1b[K" +
		"\r[0:02] 2 files, 2.0 KiB, 1.0 KiB/s\x1b[K" +
		"\r[0:03] 100.0%  3 of 3 files, 3.0 KiB of 3.0 KiB, 1.0 KiB/s\x1b[K\n"
	if out.String() != want {
		t.Errorf("drawn\n %q\nwant\n %q", out.String(), want)
	}
	if !tickerStopped {
		t.Error("the ticker was not stopped")
	}
	var none *progressReporter
	none.Stop() // no progress shown: Stop does nothing
}

// backup --json's status writer prints one status object per tick, each on
// one line, and nothing when stopped: the summary follows.
func TestBackupStatusWriter(t *testing.T) {
	ticks := make(chan time.Time)
	readings := []backup.ProgressFigures{
		{FilesDone: 2, BytesDone: 300, BytesRead: 300, Current: []string{"/data/a"}},
		{FilesDone: 5, BytesDone: 1000, TotalFiles: 10, TotalBytes: 4000, TotalKnown: true, Skipped: 1, Current: []string{"/data/b", "/data/c"}},
	}
	next := 0
	read := func() (backup.ProgressFigures, time.Duration) {
		f := readings[next]
		next++
		return f, time.Duration(next) * time.Second
	}
	var out bytes.Buffer
	r := startProgress(ticks, nil, statusWriter(&out, func() any { return backupStatus(read()) }))
	ticks <- time.Time{}
	ticks <- time.Time{}
	r.Stop()

	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 status lines, got %d:\n%s", len(lines), out.String())
	}
	want := []map[string]any{
		{"message_type": "status", "seconds_elapsed": 1.0, "percent_done": 0.0, "files_done": 2.0, "bytes_done": 300.0, "current_files": []any{"/data/a"}},
		{"message_type": "status", "seconds_elapsed": 2.0, "seconds_remaining": 6.0, "percent_done": 0.25, "total_files": 10.0, "files_done": 5.0,
			"total_bytes": 4000.0, "bytes_done": 1000.0, "error_count": 1.0, "current_files": []any{"/data/b", "/data/c"}},
	}
	for i, line := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, line)
		}
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want[i])
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("status %d\n got %s\nwant %s", i+1, gotJSON, wantJSON)
		}
	}
}

// What job show and runs show say of a running run, from its last
// heartbeat's figures.
func TestRunningProgress(t *testing.T) {
	cases := []struct {
		name string
		run  pass.Run
		want string
	}{
		{"no heartbeat with progress yet", pass.Run{Kind: pass.KindBackup}, "no progress reported yet"},
		{"a backup under way", pass.Run{Kind: pass.KindBackup, Current: "source /data",
			Figures: pass.Figures{Files: 1234, BytesRead: 2*gib + gib/10, BytesAdded: 120 * mib}},
			"1,234 files, 2.1 GiB read, 120 MiB added so far (source /data)"},
		{"with skipped entries", pass.Run{Kind: pass.KindBackup, Current: "source /srv",
			Figures: pass.Figures{Files: 3, BytesRead: kib, FilesSkipped: 2}},
			"3 files, 1.0 KiB read, 0 B added, 2 skipped so far (source /srv)"},
		{"the first source just begun", pass.Run{Kind: pass.KindBackup, Current: "source /data"},
			"0 files, 0 B read, 0 B added so far (source /data)"},
		{"another kind says its counters", pass.Run{Kind: pass.KindVerify, Current: "verify snapshot run-4-data",
			Figures: pass.Figures{Counters: map[string]int64{"trees_checked": 12, "blobs_checked": 3400}}},
			"3,400 blobs_checked, 12 trees_checked so far (verify snapshot run-4-data)"},
		{"another kind with nothing counted yet", pass.Run{Kind: pass.KindPrune, Current: "snapshots"},
			"no figures yet (snapshots)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := runningProgress(tc.run); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
