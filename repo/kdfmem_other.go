//go:build !linux

package repo

// prepareKDFMemory does nothing where transparent huge pages cannot be
// asked for (see kdfmem_linux.go).
func prepareKDFMemory(uint64) {}
