// Package cmd is nightjar's command line: one file per command group. It
// parses flags, loads configuration, wires the domain packages together and
// prints results through one printer that knows --json.
//
// It makes no decisions of its own: every rule about backups, schedules or
// repositories lives in the packages it calls. It is the only package that
// reads the real clock, the environment and the process's standard streams,
// and the only place that maps errors to exit codes (see exitcode.go).
package cmd
