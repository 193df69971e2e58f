package config

import "runtime"

// ShellArgv is the argv that runs text with the system's shell: /bin/sh -c
// on Unix, and cmd.exe /C on Windows, which has no /bin/sh. Hooks and
// command sources given as a string, and password commands, run so.
func ShellArgv(text string) []string { return shellArgvFor(runtime.GOOS, text) }

func shellArgvFor(goos, text string) []string {
	if goos == "windows" {
		return []string{"cmd.exe", "/C", text}
	}
	return []string{"/bin/sh", "-c", text}
}
