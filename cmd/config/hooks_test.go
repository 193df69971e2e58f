package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/jobs"
)

const hookJobHead = goodRepo + "[[job]]\nname = \"db\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\n"

func TestHooksAndCommandSourcesLoad(t *testing.T) {
	text := hookJobHead + `
[job.hooks]
before = ["/usr/local/bin/dump", "db"]
after = "umount /mnt/snap && echo done"
on_failure = ["notify-send", "backup failed"]
timeout = "90s"

[[job.source]]
command = ["pg_dump", "mydb"]
name = "mydb.sql"
timeout = "2h"

[[job.source]]
command = "mysqldump --all-databases | gzip"
name = "all.sql.gz"

[[job.source]]
path = "/srv"
`
	cfg, err := Parse("/etc/nightjar/config.toml", text, testNow)
	if err != nil {
		t.Fatal(err)
	}
	j := cfg.Jobs[0]
	want := jobs.Hooks{
		Before:    []string{"/usr/local/bin/dump", "db"},
		After:     []string{"/bin/sh", "-c", "umount /mnt/snap && echo done"},
		OnFailure: []string{"notify-send", "backup failed"},
		Timeout:   90 * time.Second,
		Dir:       "/etc/nightjar", // the config's folder: hooks and command sources run there
	}
	if !slices.Equal(j.Hooks.Before, want.Before) || !slices.Equal(j.Hooks.After, want.After) ||
		!slices.Equal(j.Hooks.OnFailure, want.OnFailure) || j.Hooks.OnSuccess != nil || j.Hooks.OnPartial != nil || j.Hooks.Timeout != want.Timeout ||
		j.Hooks.Dir != want.Dir {
		t.Errorf("hooks %+v, want %+v", j.Hooks, want)
	}
	if len(j.Sources) != 3 {
		t.Fatalf("sources %+v", j.Sources)
	}
	dump, gz := j.Sources[0], j.Sources[1]
	if dump.Path != "/mydb.sql" || !slices.Equal(dump.Command, []string{"pg_dump", "mydb"}) || dump.Timeout != 2*time.Hour {
		t.Errorf("command source %+v", dump)
	}
	if gz.Path != "/all.sql.gz" || !slices.Equal(gz.Command, []string{"/bin/sh", "-c", "mysqldump --all-databases | gzip"}) || gz.Timeout != 0 {
		t.Errorf("shell command source %+v", gz)
	}
	if !slices.Equal(j.Def.Sources, []string{"/mydb.sql", "/all.sql.gz", "/srv"}) {
		t.Errorf("source keys %q: want the command sources' snapshot paths and the path", j.Def.Sources)
	}
}

func TestJobWithoutHooksHasTheDefaultTimeoutAndFolder(t *testing.T) {
	cfg, err := Parse("/c.toml", hookJobHead+"[[job.source]]\npath = \"/x\"\n", testNow)
	if err != nil {
		t.Fatal(err)
	}
	if h := cfg.Jobs[0].Hooks; h.Before != nil || h.After != nil || h.Timeout != jobs.DefaultHookTimeout || h.Dir != "/" {
		t.Errorf("hooks of a job without [job.hooks]: %+v", h)
	}
}

// Every bad hook or command source key is refused with its key, its line
// and what is allowed.
func TestHookAndCommandSourceRejections(t *testing.T) {
	const path = "[[job.source]]\npath = \"/x\"\n"
	cases := []struct {
		name string
		text string
		want []string
	}{
		{"an empty shell hook", "[job.hooks]\nbefore = \"  \"\n" + path,
			[]string{"config.toml:10: job[0].hooks.before", "empty command", "/bin/sh -c"}},
		{"an empty argv hook", "[job.hooks]\nafter = []\n" + path,
			[]string{"job[0].hooks.after", "empty list", `["/usr/local/bin/dump", "db"]`}},
		{"an argv hook with a number", "[job.hooks]\non_success = [\"curl\", 3]\n" + path,
			[]string{"job[0].hooks.on_success", "element 2 is not a string"}},
		{"a hook that is a number", "[job.hooks]\non_failure = 3\n" + path,
			[]string{"job[0].hooks.on_failure", "want a list such as"}},
		{"an empty program name", "[job.hooks]\non_partial = [\"\"]\n" + path,
			[]string{"job[0].hooks.on_partial", "empty program name"}},
		{"a bad hook timeout", "[job.hooks]\ntimeout = \"soon\"\n" + path,
			[]string{"job[0].hooks.timeout", `"soon" is not allowed`, "at most 7d"}},
		{"a zero hook timeout", "[job.hooks]\ntimeout = \"0s\"\n" + path,
			[]string{"job[0].hooks.timeout", "above 0"}},
		{"an unknown hook", "[job.hooks]\nbefor = \"true\"\n" + path,
			[]string{"config.toml:10: job[0].hooks.befor", "unknown key", "before, after, on_success, on_failure, on_partial, timeout"}},
		{"a command source without a name", "[[job.source]]\ncommand = [\"pg_dump\"]\n",
			[]string{"job[0].source[0].name", "missing: a command source needs name"}},
		{"a command source name with a slash", "[[job.source]]\ncommand = [\"pg_dump\"]\nname = \"dumps/db.sql\"\n",
			[]string{"job[0].source[0].name", "without a slash"}},
		{"a command source named ..", "[[job.source]]\ncommand = [\"pg_dump\"]\nname = \"..\"\n",
			[]string{"job[0].source[0].name", "not a file name"}},
		{"a source with path and command", "[[job.source]]\npath = \"/x\"\ncommand = [\"pg_dump\"]\nname = \"db.sql\"\n",
			[]string{"job[0].source[0]", "either path or command, not both"}},
		{"a command source with excludes", "[[job.source]]\ncommand = [\"pg_dump\"]\nname = \"db.sql\"\nexclude = [\"*.tmp\"]\n",
			[]string{"job[0].source[0].exclude", "path sources only"}},
		{"an empty command", "[[job.source]]\ncommand = []\nname = \"db.sql\"\n",
			[]string{"job[0].source[0].command", "empty list"}},
		{"a bad command timeout", "[[job.source]]\ncommand = [\"pg_dump\"]\nname = \"db.sql\"\ntimeout = \"-1h\"\n",
			[]string{"job[0].source[0].timeout", "is not allowed"}},
		{"a path source with a name", "[[job.source]]\npath = \"/x\"\nname = \"x\"\n",
			[]string{"job[0].source[0].name", "command sources only"}},
		{"a path source with a timeout", "[[job.source]]\npath = \"/x\"\ntimeout = \"1h\"\n",
			[]string{"job[0].source[0].timeout", "command sources only"}},
		{"a command source named as a path source", "[[job.source]]\npath = \"/db.sql\"\n[[job.source]]\ncommand = [\"pg_dump\"]\nname = \"db.sql\"\n",
			[]string{"job[0].source", "/db.sql is named twice"}},
		{"an unknown source key", "[[job.source]]\ncommand = [\"pg_dump\"]\nnaem = \"db.sql\"\n",
			[]string{"job[0].source[0].naem", "unknown key", "path, exclude, command, name, timeout"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("/etc/nightjar/config.toml", hookJobHead+c.text, testNow)
			var invalid *ErrInvalid
			if !errors.As(err, &invalid) {
				t.Fatalf("err = %v, want *ErrInvalid", err)
			}
			for _, p := range invalid.Problems {
				if containsAll(p, c.want) {
					return
				}
			}
			t.Fatalf("no problem contains %q; problems:\n%s", c.want, strings.Join(invalid.Problems, "\n"))
		})
	}
}
