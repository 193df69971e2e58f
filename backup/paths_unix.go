//go:build linux || darwin || freebsd

package backup

// sourceElements is the tree levels of a clean absolute path: each
// element of it ("/" has none).
func sourceElements(p string) ([]string, error) { return unixSourceElements(p), nil }

// osPath is the path of the tree levels elems.
func osPath(elems []string) string { return unixOSPath(elems) }

// within reports whether p is dir or below it.
func within(dir, p string) bool { return withinPath(dir, p, "/") }

// excludePath is the path exclude patterns match: p itself.
func excludePath(p string) string { return p }
