package cmd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// stats --mode restore-size sums what restores of the snapshots would
// write; --mode raw-data counts each stored blob once, however many
// snapshots use it.
func TestStats(t *testing.T) {
	f := newReadFixture(t)
	type statsOut struct {
		Mode      string  `json:"mode"`
		Snapshots int     `json:"snapshots_count"`
		Files     int64   `json:"total_file_count"`
		Dirs      int64   `json:"total_dir_count"`
		Others    int64   `json:"total_other_count"`
		Size      int64   `json:"total_size"`
		Raw       int64   `json:"total_uncompressed_size"`
		DataBlobs int64   `json:"data_blobs"`
		TreeBlobs int64   `json:"tree_blobs"`
		Ratio     float64 `json:"compression_ratio"`
	}
	stats := func(args ...string) statsOut {
		t.Helper()
		stdout, _ := f.expect(ExitOK, append([]string{"stats", "--json"}, args...)...)
		var out statsOut
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		return out
	}
	// The first snapshot's files: a.txt 6, Readme.MD 7, notes.txt 6,
	// esc 2, big.bin 1 MiB; the symlink is another entry.
	first := stats(firstID)
	if first.Mode != "restore-size" || first.Snapshots != 1 || first.Files != 5 || first.Size != 6+7+6+2+1<<20 || first.Others != 1 {
		t.Errorf("restore-size of the first snapshot: %+v", first)
	}
	text, _ := f.expect(ExitOK, "stats", firstID)
	wantText := fmt.Sprintf("Snapshots:    1\nTotal size:   1.0 MiB (%d bytes)\nFiles:        5\nFolders:      %d\nOthers:       1\n", first.Size, first.Dirs)
	if text != wantText {
		t.Errorf("stats:\n%s\nwant:\n%s", text, wantText)
	}
	second := stats(secondID)
	all := stats()
	if all.Snapshots != 3 || all.Files != first.Files+second.Files+1 || all.Size != first.Size+second.Size+6 {
		t.Errorf("restore-size of all snapshots %+v, want the sum of %+v, %+v and the third's other.txt", all, first, second)
	}
	if byHost := stats("--host", "h2"); byHost != second {
		t.Errorf("restore-size of --host h2: %+v, want the second snapshot's %+v", byHost, second)
	}

	raw := stats("--mode", "raw-data", firstID)
	text, _ = f.expect(ExitOK, "stats", "--mode", "raw-data", firstID)
	if !strings.HasPrefix(text, "Snapshots:          1\nStored size:        ") ||
		!strings.HasSuffix(text, fmt.Sprintf("Compression ratio:  %.2fx\nBlobs:              %d data, %d tree\n", raw.Ratio, raw.DataBlobs, raw.TreeBlobs)) {
		t.Errorf("stats --mode raw-data:\n%s", text)
	}
	// big.bin is many chunks; the four small files one each.
	if raw.Mode != "raw-data" || raw.DataBlobs < 6 || raw.TreeBlobs == 0 || raw.Raw < 1<<20 || raw.Size <= 0 || raw.Ratio <= 0 {
		t.Errorf("raw-data of the first snapshot: %+v", raw)
	}
	if twice := stats("--mode", "raw-data", firstID, firstID[:8]); twice != raw {
		t.Errorf("raw-data of a snapshot named twice %+v, want it counted once: %+v", twice, raw)
	}
	// The second snapshot shares big.bin and the unchanged files with the
	// first: the pair has fewer blobs than the two counted apart.
	rawSecond := stats("--mode", "raw-data", secondID)
	pair := stats("--mode", "raw-data", firstID, secondID)
	if pair.DataBlobs != raw.DataBlobs+4 || pair.DataBlobs >= raw.DataBlobs+rawSecond.DataBlobs || pair.Raw >= raw.Raw+rawSecond.Raw {
		t.Errorf("raw-data of both %+v, first %+v, second %+v: shared blobs not counted once", pair, raw, rawSecond)
	}
}

// Bad input to stats is one line and its exit code.
func TestStatsBadInput(t *testing.T) {
	f := newReadFixture(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a mode that does not exist", []string{"stats", "--mode", "files-by-contents"}, ExitUsage, "nightjar: --mode \"files-by-contents\": want restore-size or raw-data\n"},
		{"unknown snapshot", []string{"stats", "ffff"}, ExitFailure, "nightjar: \"ffff\": snapshot not found\n"},
		{"latest with a filter that selects nothing", []string{"stats", "latest", "--path", "/nowhere"}, ExitFailure,
			"nightjar: latest: no snapshot matches --path /nowhere: snapshot not found\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := f.with(t)
			stdout, stderr, code := f.run(tc.args...)
			if code != tc.code || stderr != tc.want || stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit %d, stderr %q", code, stderr, stdout, tc.code, tc.want)
			}
		})
	}
}
