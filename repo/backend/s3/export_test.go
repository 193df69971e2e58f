package s3

// SetTempDir makes b's pack streams wait in dir, for tests that look there.
func (b *Backend) SetTempDir(dir string) { b.tempDir = dir }

// MapError is mapError, for the table test of the mapping.
var MapError = mapError

// ProfileRegion is profileRegion, for its test.
var ProfileRegion = profileRegion
