// Package s3test starts a real S3 server, versitygw, on a loopback port for
// tests, with a posix folder of the test as its storage. Tests that need it
// fail when it cannot be found; they do not skip. StartTLS starts it
// serving HTTPS with a self-signed certificate made for the test.
package s3test
