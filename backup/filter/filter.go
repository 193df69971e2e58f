package filter

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
)

// ErrBadPattern reports a pattern that Compile rejects.
var ErrBadPattern = errors.New("bad pattern")

// Matcher is a compiled list of patterns; it is safe for concurrent use.
type Matcher struct {
	patterns []pattern
}

// pattern is one compiled pattern.
type pattern struct {
	negated bool
	// comps are the pattern's components; an unanchored pattern starts with
	// "**", so that every pattern is matched from the root.
	comps []string
}

// Compile compiles patterns, in order; a later pattern overrides an earlier
// one for the paths both match. A pattern:
//
//   - with a leading "/" is anchored at the root; without one it matches at
//     any depth, against any run of consecutive path components;
//   - may use "*", "?", "[...]" and "\" within one component, as path.Match;
//   - may use "**" as a whole component, matching zero or more components
//     (elsewhere "**" is the same as "*");
//   - that matches a path matches everything below it;
//   - with a leading "!" re-includes what earlier patterns matched: the last
//     pattern that matches a path decides whether Match reports it.
//
// Patterns are cleaned with path.Clean, so a trailing "/" is ignored: a
// Matcher sees only path strings, not whether they are directories. An empty
// or malformed pattern is an error wrapping ErrBadPattern that names it.
func Compile(patterns []string) (*Matcher, error) {
	m := &Matcher{patterns: make([]pattern, 0, len(patterns))}
	for _, s := range patterns {
		p, err := compile(s)
		if err != nil {
			return nil, err
		}
		m.patterns = append(m.patterns, p)
	}
	return m, nil
}

// compile compiles one pattern.
func compile(s string) (pattern, error) {
	body, negated := strings.CutPrefix(s, "!")
	if body == "" {
		return pattern{}, fmt.Errorf("%w %q: empty", ErrBadPattern, s)
	}
	anchored := strings.HasPrefix(body, "/")
	var comps []string
	if !anchored {
		comps = append(comps, "**")
	}
	comps = append(comps, split(body)...)
	for _, c := range comps {
		if _, err := path.Match(c, ""); err != nil {
			return pattern{}, fmt.Errorf("%w %q: %v", ErrBadPattern, s, err)
		}
	}
	return pattern{negated: negated, comps: comps}, nil
}

// split returns the components of the cleaned path p; the root has none.
func split(p string) []string {
	p = strings.Trim(path.Clean("/"+p), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// Match reports whether the last pattern that matches name, a slash-separated
// absolute path, is not negated. It reports false if no pattern matches.
//
// A walker that skips a matched directory never sees the paths below it that
// a later "!" pattern re-includes: to keep /cache/keep of /cache, exclude
// /cache/* and !/cache/keep rather than /cache and !/cache/keep.
func (m *Matcher) Match(name string) bool {
	s := split(name)
	cur, next := make([]bool, len(s)+1), make([]bool, len(s)+1)
	for i := len(m.patterns) - 1; i >= 0; i-- {
		if matched, _ := m.patterns[i].match(s, cur, next); matched {
			return !m.patterns[i].negated
		}
	}
	return false
}

// ChildMayMatch reports whether some path below dir could match a pattern
// that is not negated, so that a walker looking for matches (as restore
// --include does) must descend into dir. It ignores "!" patterns: it may
// report true for a directory below which every path is re-included, but
// never false for one below which a path matches.
func (m *Matcher) ChildMayMatch(dir string) bool {
	s := split(dir)
	cur, next := make([]bool, len(s)+1), make([]bool, len(s)+1)
	for _, p := range m.patterns {
		if p.negated {
			continue
		}
		if matched, child := p.match(s, cur, next); matched || child {
			return true
		}
	}
	return false
}

// match reports whether p matches the path components s (that is, some
// leading run of them), and whether p could match a path below s because
// some remaining components of p are left once all of s is consumed. cur and
// next are scratch space of len(s)+1.
//
// It tracks, component by component of p, the set of positions in s that the
// components so far can reach, so it takes O(len(p.comps) * len(s)) steps
// however many "**" p holds.
func (p pattern) match(s []string, cur, next []bool) (matched, child bool) {
	n := len(s)
	clear(cur)
	cur[0] = true
	for _, c := range p.comps {
		if cur[n] {
			child = true
		}
		clear(next)
		alive := false
		if c == "**" {
			for j := range cur {
				next[j] = cur[j] || (j > 0 && next[j-1])
				alive = alive || next[j]
			}
		} else {
			for j := range n {
				if cur[j] {
					if ok, _ := path.Match(c, s[j]); ok {
						next[j+1] = true
						alive = true
					}
				}
			}
		}
		cur, next = next, cur
		if !alive {
			return false, child
		}
	}
	return true, child
}

// ReadPatternFile returns the patterns in the file name, one a line. Blank
// lines and lines starting with "#" are ignored, and trailing spaces, tabs
// and carriage returns are trimmed. A bad pattern is an error naming the
// file and line.
func ReadPatternFile(name string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read pattern file: %w", err)
	}
	defer f.Close()
	var patterns []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimRight(sc.Text(), " \t\r")
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if _, err := compile(s); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		patterns = append(patterns, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read pattern file %s: %w", name, err)
	}
	return patterns, nil
}
