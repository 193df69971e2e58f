// Package redact takes secrets out of the texts nightjar shows: every URL
// in a text is cut to its scheme and host (a healthcheck's UUID and a
// webhook's token live in the path, credentials in the userinfo and the
// query), and the secret strings a caller names (a password file's path,
// a password command) are replaced whole. It also folds a text onto one
// line, for warnings and notifications.
//
// It is the one redactor of status, notifications and logs. It must never
// import another package of nightjar's, never do I/O, and never return
// any part of a URL after its host.
package redact
