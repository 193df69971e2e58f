package restore

// SetOpenat2 lets a test walk with openat2 (true) or, as on kernels that
// lack it, element by element with openat (false).
func SetOpenat2(on bool) { noOpenat2.Store(!on) }
