package backup

import (
	"errors"
	"fmt"
	"strings"
)

// A source's place in the snapshot's root tree is its absolute path, one
// tree level per element: "/home/ann" is "home", then "ann". A Windows
// path's drive is a level of its own named by its letter, as restic names
// it: "C:\Users\ann" is "C", "Users", "ann". The rules of both are here,
// apart from the OS, so that both are tested on every platform.

// unixSourceElements is the tree levels of a clean absolute Unix path;
// "/" has none.
func unixSourceElements(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// unixOSPath is the Unix path of the tree levels elems.
func unixOSPath(elems []string) string {
	return "/" + strings.Join(elems, "/")
}

// errNetworkPath refuses a Windows source on a network share.
var errNetworkPath = errors.New(`a network path (\\host\share): back up a drive letter the share is mapped to`)

// windowsSourceElements is the tree levels of a clean absolute Windows
// path with a drive letter: the letter, upper case, then the folders.
// Paths without a drive letter (\\host\share, \\?\...) are refused.
func windowsSourceElements(p string) ([]string, error) {
	if len(p) < 2 || p[1] != ':' || !isASCIILetter(p[0]) {
		if strings.HasPrefix(p, `\\`) {
			return nil, errNetworkPath
		}
		return nil, fmt.Errorf("not an absolute path with a drive letter (C:\\...)")
	}
	elems := []string{strings.ToUpper(p[:1])}
	rest := strings.Trim(p[2:], `\`)
	if rest == "" {
		return elems, nil
	}
	return append(elems, strings.Split(rest, `\`)...), nil
}

// windowsOSPath is the Windows path of the tree levels elems, the first
// being a drive letter.
func windowsOSPath(elems []string) string {
	return elems[0] + `:\` + strings.Join(elems[1:], `\`)
}

func isASCIILetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

// withinPath reports whether p is dir or below it, sep separating path
// elements; dir may be a root ("/", "C:\"), which ends with sep.
func withinPath(dir, p string, sep string) bool {
	return p == dir || strings.HasSuffix(dir, sep) && strings.HasPrefix(p, dir) || strings.HasPrefix(p, dir+sep)
}

// windowsTreePath is the path of a Windows path in the snapshot's tree,
// "/" between its levels (C:\Users\ann is /C/Users/ann): what
// exclude patterns match on Windows. A path that is not one of a drive
// stays as it is.
func windowsTreePath(p string) string {
	elems, err := windowsSourceElements(p)
	if err != nil {
		return p
	}
	return "/" + strings.Join(elems, "/")
}
