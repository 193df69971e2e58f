package backup

// sourceElements is the tree levels of a clean absolute path: its drive
// letter, then each folder (windowsSourceElements).
func sourceElements(p string) ([]string, error) { return windowsSourceElements(p) }

// osPath is the path of the tree levels elems.
func osPath(elems []string) string { return windowsOSPath(elems) }

// within reports whether p is dir or below it.
func within(dir, p string) bool { return withinPath(dir, p, `\`) }
