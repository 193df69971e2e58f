package pass

// NewFakeStore returns the in-memory Store the pass's tests use, for the
// storetest conformance suite (in package pass_test).
func NewFakeStore() Store { return newFakeStore() }
