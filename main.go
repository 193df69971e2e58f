// Command nightjar schedules and runs encrypted, deduplicated backups.
package main

import (
	"os"

	"github.com/nightjar-backup/nightjar/cmd"
)

func main() {
	os.Exit(cmd.Main(os.Args, os.Stdout, os.Stderr))
}
