package backup

// sourceElements is the tree levels of a clean absolute path: its drive
// letter, then each folder (windowsSourceElements).
func sourceElements(p string) ([]string, error) { return windowsSourceElements(p) }

// osPath is the path of the tree levels elems.
func osPath(elems []string) string { return windowsOSPath(elems) }

// within reports whether p is dir or below it.
func within(dir, p string) bool { return withinPath(dir, p, `\`) }

// excludePath is the path exclude patterns match: p's path in the tree,
// with "/" between its levels (windowsTreePath), so that patterns are
// written as on every other platform ("/C/Users/*/AppData", "*.tmp").
func excludePath(p string) string { return windowsTreePath(p) }
