package cmd

import (
	"encoding/json"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

// reportUnreadable names on stderr the snapshot files a command skipped
// because they cannot be read (repo.Repository.ReadSnapshots): one warning
// with their count, or with --json one error object each, as restic prints
// errors. Nothing else of the command stops for them; check reports them as
// damage, and prune refuses to run while one exists.
func reportUnreadable(c *cli.Context, p *printer, list []repo.UnreadableSnapshot) {
	if p.jsonOut {
		for _, u := range list {
			e := errorJSON{MessageType: "error", During: commandName(c.Command), Item: u.File()}
			e.Error.Message = p.redact("unreadable snapshot file, skipped: " + u.Err.Error())
			if line, err := json.Marshal(e); err == nil {
				p.stderr.Write(append(line, '\n'))
			}
		}
		return
	}
	files := make([]string, len(list))
	for i, u := range list {
		files[i] = u.File() + ": " + u.Err.Error()
	}
	noun := "file"
	if len(list) > 1 {
		noun = "files"
	}
	p.Warnf("%d snapshot %s unreadable, skipped: %s (nightjar check reports the damage; nightjar forget ID removes such a file)",
		len(list), noun, strings.Join(files, "; "))
}
