package restore

// The Windows rules, for the tests of package restore_test that run them
// over whole snapshots.
var (
	WindowsLocalPath   = windowsLocalPath
	WindowsRefusedName = windowsRefusedName
)

// NewLackError is what an FS answers for something its platform cannot do
// at all.
func NewLackError(what, reason string) error { return &lackError{what: what, reason: reason} }
