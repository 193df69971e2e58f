package config

import (
	"sort"
	"strconv"
	"strings"
)

// lineIndex maps dotted keys ("job.2.schedule", "repository.local.path") to
// the line where they are set, for error messages. It understands the
// subset of TOML that configs use: [table], [table.sub], [[array]],
// [[array.sub]] and key = value lines.
type lineIndex map[string]int

func indexLines(src string) lineIndex {
	idx := lineIndex{}
	counters := map[string]int{} // array path -> current element number
	prefix := ""
	for n, raw := range strings.Split(src, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' {
			continue
		}
		switch {
		case strings.HasPrefix(line, "[["):
			end := strings.Index(line, "]]")
			if end < 0 {
				continue
			}
			name := strings.TrimSpace(line[2:end])
			path := resolve(name, counters)
			counters[path] = counters[path] + 1
			prefix = path + "." + strconv.Itoa(counters[path]-1)
			idx[prefix] = n + 1
		case line[0] == '[':
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			prefix = resolve(strings.TrimSpace(line[1:end]), counters)
			idx[prefix] = n + 1
		default:
			eq := strings.IndexByte(line, '=')
			if eq <= 0 {
				continue
			}
			key := strings.Trim(strings.TrimSpace(line[:eq]), `"'`)
			full := key
			if prefix != "" {
				full = prefix + "." + key
			}
			if _, seen := idx[full]; !seen {
				idx[full] = n + 1
			}
		}
	}
	return idx
}

// resolve turns "job.source" into "job.3.source" when job is an array of
// tables whose current element is 3.
func resolve(name string, counters map[string]int) string {
	parts := strings.Split(name, ".")
	path := ""
	for i, p := range parts {
		p = strings.Trim(strings.TrimSpace(p), `"'`)
		if path == "" {
			path = p
		} else {
			path += "." + p
		}
		if c, ok := counters[path]; ok && i < len(parts)-1 {
			path += "." + strconv.Itoa(c-1)
		}
	}
	return path
}

// line returns the line of key, or of its closest enclosing table.
func (idx lineIndex) line(key string) int {
	for k := key; k != ""; {
		if n, ok := idx[k]; ok {
			return n
		}
		dot := strings.LastIndexByte(k, '.')
		if dot < 0 {
			break
		}
		k = k[:dot]
	}
	// Keys reported without element numbers, such as "job.retry.attemps"
	// of an inline table: take the first element that has the prefix.
	for k := key; k != ""; {
		if found := idx.find(k); len(found) > 0 {
			return idx[found[0]]
		}
		dot := strings.LastIndexByte(k, '.')
		if dot < 0 {
			break
		}
		k = k[:dot]
	}
	return 0
}

// find returns the keys of the index that are key with array element
// numbers added: "job.schedul" finds "job.0.schedul" and "job.3.schedul".
// The decoder reports unknown keys without element numbers.
func (idx lineIndex) find(key string) []string {
	want := strings.Split(key, ".")
	var found []string
	for k := range idx {
		var named []string
		for _, part := range strings.Split(k, ".") {
			if _, err := strconv.Atoi(part); err != nil {
				named = append(named, part)
			}
		}
		if strings.Join(named, ".") == strings.Join(want, ".") {
			found = append(found, k)
		}
	}
	sort.Slice(found, func(i, j int) bool { return idx[found[i]] < idx[found[j]] })
	return found
}
