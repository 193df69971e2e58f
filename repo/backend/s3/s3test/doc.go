// Package s3test starts a real S3 server, versitygw, on a loopback port for
// tests, with a posix folder of the test as its storage. Tests that need it
// fail when it cannot be found; they do not skip.
package s3test
