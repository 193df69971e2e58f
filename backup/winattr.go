package backup

// The Windows metadata rules, kept apart from the Windows code so that
// they are tested on every platform.

// The Windows file attributes a backup reads.
const (
	fileAttributeReadOnly  = 0x1
	fileAttributeDirectory = 0x10
)

// windowsMode is the permission bits a node records for Windows file
// attributes, as Go's os package gives them: read-only is 0444, else 0666,
// and a folder adds 0111. Restore on Windows sets the read-only attribute
// from the owner's write bit; elsewhere these are ordinary modes.
func windowsMode(attrs uint32) uint32 {
	mode := uint32(0o666)
	if attrs&fileAttributeReadOnly != 0 {
		mode = 0o444
	}
	if attrs&fileAttributeDirectory != 0 {
		mode |= 0o111
	}
	return mode
}

// windowsLacks is what a backup on Windows does not record, named once
// per backup.
var windowsLacks = []Lack{
	{What: "owners and groups", Reason: "Windows has no POSIX owners: uid, gid, user and group are left empty"},
	{What: "permission bits", Reason: "Windows has only the read-only attribute: modes are 0444 or 0666 (folders 0555 or 0777)"},
	{What: "extended attributes", Reason: "Windows has none of the POSIX kind (alternate data streams are not read)"},
	{What: "hard links", Reason: "not detected on Windows: each link is saved as a file of its own, its content stored once"},
	{What: "change times", Reason: "Windows tells none without opening each entry: ctime is left empty"},
}
