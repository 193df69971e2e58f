//go:build linux

package schede2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/cmd/internal/buildbin"
)

// moreLine is the command line a paged listing's last line gives for its
// next page ("more: nightjar ..."), as arguments of the binary; nil when
// there is none.
func moreLine(t *testing.T, res result) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	last := lines[len(lines)-1]
	rest, ok := strings.CutPrefix(last, "more: nightjar ")
	if !ok {
		return nil
	}
	for _, l := range lines[:len(lines)-1] {
		if strings.HasPrefix(l, "more:") {
			t.Fatalf("a more line that is not the last:\n%s", res)
		}
	}
	return strings.Fields(rest)
}

// firstColumn lists the first column of a table's rows (after its header,
// before a more line).
func firstColumn(res result) []string {
	var out []string
	for i, l := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if i == 0 || strings.HasPrefix(l, "more:") {
			continue
		}
		out = append(out, strings.Fields(l)[0])
	}
	return out
}

func historySources(t *testing.T, w *world) string {
	t.Helper()
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "f.txt"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return src
}

// runs and job list filter by status, job, repository and kind in the
// state database, and page newest first: following the more lines lists
// every run once, in order.
func TestRunsAndJobListFilterAndPage(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := historySources(t, w)
	if err := buildbin.CreateRepository(w.path("offsite"), testPassword); err != nil {
		t.Fatal(err)
	}
	offsite := `
[repository.offsite]
path = "{{dir}}/offsite"
password_file = "{{pw}}"
create_if_missing = true
`
	far := strings.Replace(job("far", "manual", "", src), `repository = "main"`, `repository = "offsite"`, 1)
	w.writeConfig(header("", "") + offsite + job("good", "manual", "", src) +
		job("bad", "manual", `retry = { attempts = 1 }`, w.path("missing")) + far)
	for range 3 {
		w.must(exitOK, "job", "run", "good", "--wait")
	}
	w.must(exitFailure, "job", "run", "bad", "--wait")
	w.must(exitOK, "job", "run", "far", "--wait")
	all := w.runs()
	if len(all) != 5 {
		t.Fatalf("%d runs, want 5: %+v", len(all), all)
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string // jobs of the runs listed, newest first
	}{
		{"status", []string{"--status", "failed"}, []string{"bad"}},
		{"statuses repeated", []string{"--status", "failed", "--status", "succeeded", "--job", "far"}, []string{"far"}},
		{"status list", []string{"--status", "failed,succeeded", "--repository", "main"}, []string{"bad", "good", "good", "good"}},
		{"repository", []string{"--repository", "offsite"}, []string{"far"}},
		{"kind and job", []string{"--kind", "backup", "--job", "good", "--limit", "2"}, []string{"good", "good"}},
		{"other kind", []string{"--kind", "drill"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs []runRec
			decodeWhole(t, w.must(exitOK, append([]string{"runs", "--json"}, tc.args...)...), &runs)
			var got []string
			for _, r := range runs {
				got = append(got, r.Job)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("runs %v: jobs %v, want %v", tc.args, got, tc.want)
			}
		})
	}

	// Pages of two, newest first, until the last page has no more line.
	var paged []string
	res := w.must(exitOK, "runs", "--limit", "2")
	for pages := 1; ; pages++ {
		paged = append(paged, firstColumn(res)...)
		next := moreLine(t, res)
		if next == nil {
			if pages != 3 {
				t.Errorf("%d pages of 2 for 5 runs, want 3", pages)
			}
			break
		}
		if pages > 3 {
			t.Fatalf("more pages than runs:\n%s", res)
		}
		res = w.run(next...)
		if res.Code != exitOK {
			t.Fatalf("the more line's command failed\n%s", res)
		}
	}
	var want []string
	for _, r := range all {
		want = append(want, strconv.FormatInt(r.ID, 10))
	}
	if !slices.Equal(paged, want) {
		t.Errorf("runs over the pages %v, want every run once, newest first: %v", paged, want)
	}
	res = w.must(exitOK, "runs", "--job", "good", "--status", "succeeded", "--limit", "1")
	if next := strings.Join(moreLine(t, res), " "); !strings.HasPrefix(next, "runs --job good --status succeeded --limit 1 ") ||
		!strings.HasSuffix(next, "--before "+strconv.FormatInt(all[2].ID, 10)) { // all[2] is good's newest run
		t.Errorf("the more line does not keep the filters: %q", next)
	}

	res = w.must(exitUsage, "runs", "--status", "failed,bogus")
	if !strings.Contains(res.Stderr, `invalid --status "bogus": want one of queued, running, succeeded, partial_failure, failed, cancelled, interrupted`) {
		t.Errorf("a bad --status does not name the allowed ones:\n%s", res)
	}
	w.must(exitUsage, "runs", "--kind", "backups")
	if res := w.must(exitOK, "runs", "--repository", "offsite", "--status", "failed"); !strings.Contains(res.Stdout, "no runs matching --status failed --repository offsite") {
		t.Errorf("an empty listing does not say what matched nothing:\n%s", res)
	}
	// A name that is not there is a usage error that lists the names
	// there are, not an empty listing.
	for _, args := range [][]string{{"runs", "--repository", "nowhere"}, {"job", "list", "--repository", "nowhere"}} {
		res := w.must(exitUsage, args...)
		if want := "unknown --repository nowhere: want a repository of the config: main, offsite\n"; !strings.HasSuffix(res.Stderr, want) ||
			strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 || res.Stdout != "" {
			t.Errorf("%v: want one line %q\n%s", args, want, res)
		}
	}
	res = w.must(exitUsage, "runs", "--job", "nosuch")
	if !strings.Contains(res.Stderr, "unknown --job nosuch: want a job of the config or of the state database: ") ||
		!strings.Contains(res.Stderr, "bad, far, good") {
		t.Errorf("runs --job of an unknown job does not list the jobs:\n%s", res)
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"last run failed", []string{"--status", "failed"}, []string{"bad"}},
		{"last run succeeded in main", []string{"--status", "succeeded", "--repository", "main"}, []string{"good"}},
		{"repository", []string{"--repository", "offsite"}, []string{"far"}},
		{"page", []string{"--limit", "2", "--after", "bad"}, []string{"far", "good"}},
	} {
		t.Run("job list "+tc.name, func(t *testing.T) {
			var jobs []jobRec
			decodeWhole(t, w.must(exitOK, append([]string{"job", "list", "--json"}, tc.args...)...), &jobs)
			var got []string
			for _, j := range jobs {
				got = append(got, j.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("job list %v: %v, want %v", tc.args, got, tc.want)
			}
		})
	}
	res = w.must(exitOK, "job", "list", "--limit", "1")
	if got := firstColumn(res); !slices.Equal(got, []string{"bad"}) || !strings.HasSuffix(strings.Join(moreLine(t, res), " "), "--after bad") {
		t.Errorf("job list --limit 1: jobs %v, want bad and a more line after it\n%s", got, res)
	}
	res = w.must(exitUsage, "job", "list", "--status", "broken")
	if !strings.Contains(res.Stderr, "paused, never") {
		t.Errorf("a bad job list --status does not name paused and never:\n%s", res)
	}
}

// The passes purge runs older than keep_runs, keeping each job's newest,
// and audit rows older than keep_audit; the JSON log of the pass says how
// many, and every record about a run names the run and its job.
func TestPassesPurgeOldHistory(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := historySources(t, w)
	w.writeConfig(header(`keep_runs = "2d"
keep_audit = "3d"`, "") + job("a", "manual", "", src) + job("b", "manual", "", src))
	var ids []int64
	for _, at := range []string{"2026-06-01T12:00:00Z", "2026-06-02T12:00:00Z", "2026-06-03T12:00:00Z"} {
		w.must(exitOK, "job", "run", "a", "--wait", "--at", at)
		ids = append(ids, w.runs()[0].ID)
	}
	w.must(exitOK, "job", "run", "b", "--wait", "--at", "2026-06-01T13:00:00Z")
	b := w.runs()[0].ID

	// On June 5 at 13:00 runs that ended before June 3 13:00 go, but for
	// each job's newest.
	res := w.must(exitOK, "tick", "--at", "2026-06-05T13:00:00Z", "-v", "--log-format", "json")
	var purged map[string]any
	for _, line := range strings.Split(strings.TrimSpace(res.Stderr), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %v\n%s", err, res)
		}
		if _, ok := rec["run"]; ok && rec["job"] == nil {
			t.Errorf("a log record with a run has no job: %s", line)
		}
		if rec["msg"] == "history purged" {
			purged = rec
		}
	}
	// Audit rows: the jobs' creation (June 1), the first two triggers of a
	// and the trigger of b are older than June 2 13:00.
	if purged == nil || purged["runs"] != float64(2) || purged["audit_rows"] != float64(5) {
		t.Errorf("the pass logged %v, want 2 runs and 5 audit rows purged\n%s", purged, res)
	}
	if strings.Contains(res.Stderr, w.pw) {
		t.Errorf("the log shows the password file's path:\n%s", res.Stderr)
	}
	var left []int64
	for _, r := range w.runs() {
		left = append(left, r.ID)
	}
	if want := []int64{b, ids[2]}; !slices.Equal(left, want) {
		t.Errorf("runs left %v, want a's newest and b's only run %v", left, want)
	}
	var audit []struct {
		Action string `json:"action"`
		Target string `json:"target"`
	}
	decodeWhole(t, w.must(exitOK, "audit", "--json"), &audit)
	if len(audit) != 1 || audit[0].Action != "trigger" || audit[0].Target != "a" {
		t.Errorf("audit left %+v, want the trigger of a's last run", audit)
	}
	// Nothing more is old enough.
	res = w.must(exitOK, "tick", "--at", "2026-06-05T13:01:00Z", "-v")
	if strings.Contains(res.Stderr, "history purged") {
		t.Errorf("a second pass purged again:\n%s", res.Stderr)
	}
}

// audit says who did what to which job and run, newest first: pause,
// resume, run, cancel, drill, and the config's create and delete; --job
// keeps a job's rows and its runs', and pages like runs.
func TestAuditShowsWhoDidWhat(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := historySources(t, w)
	w.writeConfig(header("", "") + job("a", "manual", "", src) + job("b", "manual", "", src))
	w.must(exitOK, "job", "pause", "a")
	w.must(exitOK, "job", "resume", "a")
	w.must(exitOK, "job", "run", "a")
	queued := w.runs()[0].ID
	w.must(exitOK, "runs", "cancel", strconv.FormatInt(queued, 10))
	w.must(exitOK, "job", "run", "a", "--wait")
	w.must(exitOK, "drill", "a")
	w.must(exitOK, "job", "run", "b")
	w.writeConfig(header("", "") + job("a", "manual", "", src))
	w.must(exitOK, "job", "list")

	type row struct {
		User   string `json:"user"`
		Host   string `json:"host"`
		Action string `json:"action"`
		Target string `json:"target"`
		Job    string `json:"job"`
		Detail string `json:"detail"`
	}
	var rows []row
	decodeWhole(t, w.must(exitOK, "audit", "--json", "--job", "a"), &rows)
	var got []string
	for _, r := range rows {
		got = append(got, r.Action+" "+r.Target)
	}
	cancel := "cancel run " + strconv.FormatInt(queued, 10)
	want := []string{"trigger a", "trigger a", cancel, "trigger a", "resume a", "pause a", "create a"}
	if !slices.Equal(got, want) {
		t.Errorf("audit --job a: %q, want %q", got, want)
	}
	host, _ := os.Hostname()
	for _, r := range rows {
		wantUser := r.User != "" && r.User != "config"
		if r.Action == "create" {
			wantUser = r.User == "config"
		}
		if !wantUser || r.Host != host || r.Job != "a" {
			t.Errorf("audit row %+v: want a user (config for create), this host, job a", r)
		}
	}
	if !strings.HasPrefix(rows[0].Detail, "drill run ") || !strings.HasPrefix(rows[1].Detail, "backup run ") {
		t.Errorf("the trigger rows do not say which kind of run was queued: %q, %q", rows[0].Detail, rows[1].Detail)
	}

	decodeWhole(t, w.must(exitOK, "audit", "--json"), &rows)
	if len(rows) < 2 || rows[0].Action+" "+rows[0].Target != "delete b" || rows[1].Action+" "+rows[1].Target != "trigger b" {
		t.Errorf("audit: newest rows %+v, want the delete of b, then its trigger", rows[:min(2, len(rows))])
	}
	// b left the config, and its rows stay: --job b is no usage error;
	// a job never known is, naming the jobs there are.
	decodeWhole(t, w.must(exitOK, "audit", "--json", "--job", "b"), &rows)
	if len(rows) != 3 || rows[0].Action != "delete" || rows[2].Action != "create" {
		t.Errorf("audit --job b of a removed job: %+v, want its delete, trigger and create", rows)
	}
	res := w.must(exitUsage, "audit", "--job", "nosuch")
	if want := "unknown --job nosuch: want a job of the config or of the state database: a, b\n"; !strings.HasSuffix(res.Stderr, want) {
		t.Errorf("audit --job of an unknown job: want %q\n%s", want, res)
	}
	res = w.must(exitOK, "audit", "--limit", "2", "--job", "a")
	if !strings.Contains(res.Stdout, "WHO") || !strings.Contains(res.Stdout, "@"+host) {
		t.Errorf("audit's text does not say who, as user@host:\n%s", res)
	}
	next := moreLine(t, res)
	if next == nil {
		t.Fatalf("audit --limit 2 of 7 rows has no more line:\n%s", res)
	}
	res = w.run(append(next, "--json")...)
	decodeWhole(t, res, &rows)
	if len(rows) != 2 || rows[0].Action+" "+rows[0].Target != cancel {
		t.Errorf("audit's second page %+v, want the cancel first", rows)
	}
}
