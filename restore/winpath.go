package restore

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The rules of Windows names and attributes, kept apart from the Windows
// file system code (fs_windows.go) so that they are tested everywhere.

// windowsLocalPath is where the entry at snapshot path p goes below the
// target on Windows, with "/" between its elements: p itself, except that
// a drive as its first element ("C:", as a Windows backup may name it)
// loses its colon, so that "/C:/Users/x" and "/C/Users/x" both go to
// TARGET\C\Users\x, as restic restores them.
func windowsLocalPath(p string) string {
	rest := strings.TrimPrefix(p, "/")
	first, tail, _ := strings.Cut(rest, "/")
	if !isDrive(first) {
		return p
	}
	if tail == "" {
		return "/" + first[:1]
	}
	return "/" + first[:1] + "/" + tail
}

// isDrive tells whether name is a drive letter with its colon ("C:").
func isDrive(name string) bool {
	return len(name) == 2 && name[1] == ':' && (name[0] >= 'A' && name[0] <= 'Z' || name[0] >= 'a' && name[0] <= 'z')
}

// windowsRefusedName says why the last element of snapshot path p cannot
// be restored under its name on Windows, or "" when it can. A drive as the
// first element is mapped (windowsLocalPath), not refused.
func windowsRefusedName(p string) string {
	rest := strings.TrimPrefix(p, "/")
	i := strings.LastIndexByte(rest, '/')
	if i < 0 && isDrive(rest) {
		return ""
	}
	if problem := windowsNameProblem(rest[i+1:]); problem != "" {
		return problem + ": not restored"
	}
	return ""
}

// windowsForbidden are the characters Windows refuses in a name, besides
// the control characters; "\" is also its separator, which a name from
// elsewhere must never become.
const windowsForbidden = `<>:"/\|?*`

// windowsReserved are the device names Windows reserves, with or without
// an extension: a file called "con.txt" would be the console.
var windowsReserved = map[string]bool{
	"CON": true, "PRN": true, "AUX": true, "NUL": true, "CONIN$": true, "CONOUT$": true,
	"COM1": true, "COM2": true, "COM3": true, "COM4": true, "COM5": true, "COM6": true, "COM7": true, "COM8": true, "COM9": true,
	"COM¹": true, "COM²": true, "COM³": true,
	"LPT1": true, "LPT2": true, "LPT3": true, "LPT4": true, "LPT5": true, "LPT6": true, "LPT7": true, "LPT8": true, "LPT9": true,
	"LPT¹": true, "LPT²": true, "LPT³": true,
}

// windowsNameProblem says why name cannot be a file name on Windows, or ""
// when it can.
func windowsNameProblem(name string) string {
	if !utf8.ValidString(name) {
		return "the name is not valid UTF-8, which Windows cannot spell"
	}
	for _, c := range name {
		if c < 0x20 {
			return fmt.Sprintf("the name holds the control character %U, which Windows forbids", c)
		}
		if strings.ContainsRune(windowsForbidden, c) {
			return fmt.Sprintf("the name holds %q, which Windows forbids", c)
		}
	}
	if strings.HasSuffix(name, ".") || strings.HasSuffix(name, " ") {
		return "the name ends with a dot or a space, which Windows drops"
	}
	base, _, _ := strings.Cut(name, ".")
	if dev := strings.ToUpper(strings.TrimRight(base, " ")); windowsReserved[dev] {
		return fmt.Sprintf("%s is a device name Windows reserves", dev)
	}
	return ""
}

// The Windows file attributes restore reads and writes.
const (
	fileAttributeReadOnly  = 0x1
	fileAttributeDirectory = 0x10
)

// windowsAttributes returns attrs, a file's Windows attributes, with the
// read-only attribute set from mode, the permission bits of the snapshot:
// a file without its owner's write bit is read-only, one with it is not.
// A folder's attributes stay as they are: Windows takes a read-only
// folder as a customised one and still writes into it.
func windowsAttributes(attrs, mode uint32) uint32 {
	if attrs&fileAttributeDirectory != 0 {
		return attrs
	}
	if mode&0o200 == 0 {
		return attrs | fileAttributeReadOnly
	}
	return attrs &^ fileAttributeReadOnly
}
