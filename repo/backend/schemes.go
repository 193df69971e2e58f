package backend

// Schemes returns the names of the kinds of storage a location may start
// with ("local", "s3"), for checks and messages of callers.
func Schemes() []string { return schemeNames() }
