// Package secret reads a repository's password from a file or from a
// command's output, bounded and with the checks ssh makes for its keys.
//
// What it must never do: put a password, a command's standard error or
// (in its errors) a password file's path into an error or a warning, since
// these reach the state database, run messages, hooks and logs; read more
// than one line of MaxLine bytes into memory; or leave a password command
// running past its timeout. Errors read as the continuation of a phrase
// that names the source ("its password_file" + " cannot be read: ...").
package secret
