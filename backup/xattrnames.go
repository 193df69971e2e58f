package backup

// The two ways Unix systems list extended attribute names, kept apart
// from the system calls so that both are tested on every platform.

// parseXattrList splits a list of NUL-terminated names, as Linux's
// llistxattr and macOS's listxattr give them; empty names are dropped.
func parseXattrList(buf []byte) []string {
	var names []string
	start := 0
	for i := 0; i < len(buf); i++ {
		if buf[i] != 0 {
			continue
		}
		if i > start {
			names = append(names, string(buf[start:i]))
		}
		start = i + 1
	}
	return names
}

// parseExtattrList splits a list of length-prefixed names (one byte of
// length, then the name, no NUL), as FreeBSD's extattr_list_link gives
// the names of one namespace, and puts prefix ("user.") before each. A
// length running past the end ends the list.
func parseExtattrList(buf []byte, prefix string) []string {
	var names []string
	for len(buf) > 0 {
		n := int(buf[0])
		if 1+n > len(buf) {
			break
		}
		if n > 0 {
			names = append(names, prefix+string(buf[1:1+n]))
		}
		buf = buf[1+n:]
	}
	return names
}
