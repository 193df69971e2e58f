package filter

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		yes, no  []string
	}{
		{"no patterns", nil, nil, []string{"/", "/a"}},
		{"extension at any depth", []string{"*.tmp"},
			[]string{"/c.tmp", "/a/b/c.tmp", "/a/x.tmp/y"},
			[]string{"/", "/a/b/c.tmpx", "/a/b/tmp", "/a/b/c.tmp.gz"}},
		{"directory contents at any depth", []string{"cache/*"},
			[]string{"/x/cache/y", "/x/cache/y/z", "/cache/y"},
			[]string{"/x/cache", "/x/cachey/z", "/x/mycache/y"}},
		{"name at any depth", []string{"cache"},
			[]string{"/cache", "/x/cache", "/x/cache/y/z"},
			[]string{"/x/cachet", "/x/mycache", "/"}},
		{"anchored", []string{"/home"},
			[]string{"/home", "/home/u/x"},
			[]string{"/x/home", "/homes"}},
		{"anchored with star", []string{"/home/*/.cache"},
			[]string{"/home/u/.cache", "/home/u/.cache/z"},
			[]string{"/srv/home/u/.cache", "/home/.cache", "/home/u/v/.cache"}},
		{"double star anchored", []string{"/home/**/*.log"},
			[]string{"/home/a.log", "/home/u/x/a.log", "/home/a.log/b"},
			[]string{"/var/a.log", "/home/a.logs"}},
		{"double star between", []string{"/a/**/b"},
			[]string{"/a/b", "/a/x/b", "/a/x/y/b/c"},
			[]string{"/a/xb", "/a", "/x/a/b"}},
		{"double star unanchored", []string{"a/**/b"},
			[]string{"/a/b", "/x/a/b", "/x/a/y/z/b"},
			[]string{"/x/a/c", "/x/ab"}},
		{"leading double star", []string{"**/node_modules"},
			[]string{"/node_modules", "/p/q/node_modules/r"},
			[]string{"/p/node_modulesx"}},
		{"trailing double star", []string{"/a/**"},
			[]string{"/a", "/a/b/c"},
			[]string{"/b"}},
		{"double star within a component is a star", []string{"/a**b"},
			[]string{"/ab", "/axxb"},
			[]string{"/a/b"}},
		{"question mark", []string{"?.txt"},
			[]string{"/d/a.txt"},
			[]string{"/d/ab.txt", "/d/.txt"}},
		{"character class", []string{"/[ab].c"},
			[]string{"/a.c", "/b.c"},
			[]string{"/c.c"}},
		{"escaped star", []string{`/\*`},
			[]string{"/*"},
			[]string{"/a"}},
		{"star alone", []string{"*"},
			[]string{"/a", "/a/b"},
			[]string{"/"}},
		{"root", []string{"/"},
			[]string{"/", "/a/b"},
			nil},
		{"trailing slash ignored", []string{"cache/"},
			[]string{"/x/cache", "/x/cache/y"},
			[]string{"/x/cachey"}},
		{"path is cleaned", []string{"/a/b/c.tmp"},
			[]string{"/a//b/./c.tmp", "a/b/c.tmp", "/a/b/c.tmp/"},
			nil},
		{"negation re-includes", []string{"*.log", "!important.log"},
			[]string{"/a/x.log"},
			[]string{"/a/important.log"}},
		{"last matching pattern wins", []string{"/data", "!/data/keep", "/data/keep/tmp"},
			[]string{"/data", "/data/x", "/data/keep/tmp/z"},
			[]string{"/data/keep", "/data/keep/y"}},
		{"earlier negation is overridden", []string{"!a", "a"},
			[]string{"/a"},
			nil},
		{"negation alone matches nothing", []string{"!/a"},
			nil,
			[]string{"/a", "/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Compile(tt.patterns)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.patterns, err)
			}
			for _, p := range tt.yes {
				if !m.Match(p) {
					t.Errorf("%q: Match(%q) = false, want true", tt.patterns, p)
				}
			}
			for _, p := range tt.no {
				if m.Match(p) {
					t.Errorf("%q: Match(%q) = true, want false", tt.patterns, p)
				}
			}
		})
	}
}

func TestChildMayMatch(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		yes, no  []string
	}{
		{"no patterns", nil, nil, []string{"/", "/a"}},
		{"anchored path", []string{"/home/u/docs"},
			[]string{"/", "/home", "/home/u", "/home/u/docs", "/home/u/docs/x"},
			[]string{"/home/v", "/var", "/home/u/doc"}},
		{"unanchored", []string{"*.go"},
			[]string{"/", "/a", "/a/b/c"},
			nil},
		{"star component", []string{"/a/*/c"},
			[]string{"/a", "/a/b", "/a/b/c", "/a/b/c/d"},
			[]string{"/x", "/a/b/d"}},
		{"double star", []string{"/a/**/c"},
			[]string{"/a", "/a/b/d/e"},
			[]string{"/x", "/b/a"}},
		{"negated patterns are ignored", []string{"!/a"},
			nil,
			[]string{"/", "/a"}},
		{"any positive pattern", []string{"/a/b", "/c/d"},
			[]string{"/a", "/c"},
			[]string{"/b", "/d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Compile(tt.patterns)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.patterns, err)
			}
			for _, d := range tt.yes {
				if !m.ChildMayMatch(d) {
					t.Errorf("%q: ChildMayMatch(%q) = false, want true", tt.patterns, d)
				}
			}
			for _, d := range tt.no {
				if m.ChildMayMatch(d) {
					t.Errorf("%q: ChildMayMatch(%q) = true, want false", tt.patterns, d)
				}
			}
		})
	}
}

func TestCompileRejects(t *testing.T) {
	tests := []struct {
		name, pattern, want string
	}{
		{"empty", "", `bad pattern "": empty`},
		{"negation of nothing", "!", `bad pattern "!": empty`},
		{"open class", "[ab", `bad pattern "[ab": syntax error in pattern`},
		{"open class deeper", "/a/[b/c", `bad pattern "/a/[b/c": syntax error in pattern`},
		{"trailing backslash", `a\`, `bad pattern "a\\": syntax error in pattern`},
		{"negated bad", "![", `bad pattern "![": syntax error in pattern`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile([]string{"*.ok", tt.pattern})
			if err == nil || !errors.Is(err, ErrBadPattern) || err.Error() != tt.want {
				t.Fatalf("Compile(%q) error = %v, want %s", tt.pattern, err, tt.want)
			}
		})
	}
}

func TestReadPatternFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		file    string
		want    []string
		wantErr string
	}{
		{"comments blanks and trailing spaces",
			write("ok", "# caches\n*.tmp  \n\n   \n/home/*/.cache\t\r\n!/home/u/.cache/keep\n#x\n"),
			[]string{"*.tmp", "/home/*/.cache", "!/home/u/.cache/keep"}, ""},
		{"leading spaces kept", write("lead", "  a\n"), []string{"  a"}, ""},
		{"empty file", write("empty", ""), nil, ""},
		{"bad pattern names file and line",
			write("bad", "# x\n*.tmp\n[oops\n"),
			nil, filepath.Join(dir, "bad") + `:3: bad pattern "[oops": syntax error in pattern`},
		{"missing file", filepath.Join(dir, "missing"),
			nil, "read pattern file: open " + filepath.Join(dir, "missing") + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadPatternFile(tt.file)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ReadPatternFile error = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("ReadPatternFile = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// FuzzMatch checks that compiled patterns never panic and keep two promises:
// a pattern that matches a directory matches what is below it, and
// ChildMayMatch is true for a directory below which a path matches.
func FuzzMatch(f *testing.F) {
	f.Add("*.tmp", "/a/b", "c.tmp")
	f.Add("/home/*/.cache", "/home/u", ".cache")
	f.Add("/a/**/b", "/a/x/y", "b")
	f.Add("**/**/**/x", "/a/b/c/d/e/f", "x")
	f.Add("!cache", "/x", "cache")
	f.Add("[", "/", "a")
	f.Add(`\*`, "", "*")
	f.Fuzz(func(t *testing.T, pattern, dir, child string) {
		m, err := Compile([]string{pattern})
		if err != nil {
			return
		}
		dirMatch := m.Match(dir)
		childMay := m.ChildMayMatch(dir)
		if child == "" || child == "." || child == ".." || strings.Contains(child, "/") || strings.HasPrefix(pattern, "!") {
			return
		}
		below := path.Join("/", dir, child)
		if dirMatch && !m.Match(below) {
			t.Fatalf("%q matches %q but not %q below it", pattern, dir, below)
		}
		if m.Match(below) && !childMay {
			t.Fatalf("%q matches %q but ChildMayMatch(%q) is false", pattern, below, dir)
		}
	})
}
