package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/nightjar-backup/nightjar/"

// importRules says which of nightjar's packages the (non-test) code of a
// package may import: the direction of docs/ARCHITECTURE.md. A package is
// ruled by the longest prefix that names it; its own sub-packages are
// always allowed.
var importRules = []struct {
	pkg     string
	allowed []string
}{
	{"schedule", nil},
	{"schedule/pass", []string{"schedule"}},
	{"directio", nil},
	{"redact", nil},
	{"hostid", nil},
	{"repo", []string{"directio", "hostid"}},
	{"backup", []string{"repo"}},
	{"restore", []string{"repo", "directio"}},
	{"db", []string{"schedule"}},
	{"status", []string{"schedule/pass", "schedule", "redact"}},
	{"jobs", []string{"backup", "restore", "repo", "schedule", "redact"}},
	{"notify", []string{"schedule/pass", "redact"}},
	{"metrics", []string{"status", "schedule/pass"}},
	{"bench", []string{"backup", "restore", "repo"}},
	{"cmd", []string{"jobs", "backup", "restore", "repo", "db", "schedule", "directio", "notify", "status", "metrics", "redact", "hostid"}},
	{"", []string{"cmd"}}, // main
}

// TestImportsPointDown fails when a package imports one of ours that its
// rule does not allow: repo and schedule import nothing of ours but their
// own, the engine knows nothing of the scheduler, the pass sees no
// concrete store or executor, and only main imports cmd.
func TestImportsPointDown(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if pkg == "." {
			pkg = ""
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if !strings.HasPrefix(imp, module) {
				continue
			}
			checked++
			if !mayImport(pkg, strings.TrimPrefix(imp, module)) {
				t.Errorf("%s imports %s, against the direction of docs/ARCHITECTURE.md", path, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no import of ours was found: the walk read nothing")
	}
}

func mayImport(pkg, imp string) bool {
	rule, ruleLen := -1, -1
	for i, r := range importRules {
		if within(pkg, r.pkg) && len(r.pkg) > ruleLen {
			rule, ruleLen = i, len(r.pkg)
		}
	}
	if rule < 0 {
		return false
	}
	r := importRules[rule]
	if r.pkg != "" && within(imp, r.pkg) {
		return true
	}
	for _, a := range r.allowed {
		if within(imp, a) {
			return true
		}
	}
	return false
}

// within reports whether pkg is base or below it ("" is the root, which
// holds only main).
func within(pkg, base string) bool {
	if base == "" {
		return pkg == ""
	}
	return pkg == base || strings.HasPrefix(pkg, base+"/")
}

func TestMayImport(t *testing.T) {
	cases := []struct {
		pkg, imp string
		want     bool
	}{
		{"repo", "repo/chunker", true},
		{"repo/backend/local", "repo", true},
		{"repo/backend/local", "directio", true},
		{"repo", "schedule", false},
		{"repo/backend", "backup", false},
		{"schedule/pass", "schedule", true},
		{"schedule/pass", "db", false},
		{"schedule", "schedule/pass", true},
		{"backup", "schedule/pass", false},
		{"backup", "repo/chunker", true},
		{"restore", "backup", false},
		{"db", "repo", false},
		{"jobs", "db", false},
		{"notify", "schedule/pass", true},
		{"notify", "schedule", false},
		{"notify", "db", false},
		{"notify", "redact", true},
		{"status", "redact", true},
		{"redact", "schedule", false},
		{"cmd/config", "notify", true},
		{"cmd/config", "schedule/pass", true},
		{"metrics", "status", true},
		{"metrics", "schedule/pass", true},
		{"metrics", "schedule", false},
		{"metrics", "db", false},
		{"", "cmd", true},
		{"", "repo", false},
		{"tools", "repo", false}, // a package no rule names
	}
	for _, c := range cases {
		if got := mayImport(c.pkg, c.imp); got != c.want {
			t.Errorf("mayImport(%q, %q) = %v, want %v", c.pkg, c.imp, got, c.want)
		}
	}
}
