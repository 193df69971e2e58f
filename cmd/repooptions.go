package cmd

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/backup/limit"
	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/repo/backend"
)

// storageFlags set what a repository location cannot carry: bandwidth caps
// and the settings of object storage. They follow restic's names.
func storageFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "limit-upload", EnvVars: []string{"NIGHTJAR_LIMIT_UPLOAD"}, Usage: "write at most `RATE` to the repository's storage (such as 8MB/s or 100Mbit)"},
		&cli.StringFlag{Name: "limit-download", EnvVars: []string{"NIGHTJAR_LIMIT_DOWNLOAD"}, Usage: "read at most `RATE` from the repository's storage"},
		&cli.StringSliceFlag{Name: "option", Aliases: []string{"o"}, Usage: "set a storage option `KEY=VALUE`: " + strings.Join(storageOptionKeys, ", ") + " (repeatable)"},
	}
}

// storageOptionKeys are the keys --option takes, restic's.
var storageOptionKeys = []string{"s3.bucket-lookup", "s3.region", "s3.ca-file"}

// flagOptions reads the storage settings of the flags: a bad rate or option
// is a usage error in one line.
func flagOptions(c *cli.Context) (backend.Options, error) {
	var opts backend.Options
	for _, f := range []struct {
		name string
		into *int64
	}{{"limit-upload", &opts.UploadLimit}, {"limit-download", &opts.DownloadLimit}} {
		text := c.String(f.name)
		if text == "" {
			continue
		}
		rate, err := limit.ParseRate(text)
		if err != nil {
			return backend.Options{}, usageError{fmt.Errorf("--%s: %w", f.name, err)}
		}
		*f.into = rate
	}
	for _, o := range c.StringSlice("option") {
		key, value, ok := strings.Cut(o, "=")
		if !ok || value == "" {
			return backend.Options{}, usageError{fmt.Errorf("--option %q: want KEY=VALUE with a key of %s", o, strings.Join(storageOptionKeys, ", "))}
		}
		switch key {
		case "s3.bucket-lookup":
			if value != "auto" && value != "path" && value != "dns" {
				return backend.Options{}, usageError{fmt.Errorf("--option s3.bucket-lookup=%s: want auto, path or dns", value)}
			}
			opts.BucketLookup = value
		case "s3.region":
			opts.Region = value
		case "s3.ca-file":
			opts.CAFile = value
		default:
			return backend.Options{}, usageError{fmt.Errorf("--option %q: unknown key %q (known: %s)", o, key, strings.Join(storageOptionKeys, ", "))}
		}
	}
	return opts, nil
}

// configLocation is the location of a configured repository: its url, or
// its path, which is a local folder whatever it looks like (a colon in it
// names no scheme).
func configLocation(rc config.Repository) string {
	if rc.URL != "" {
		return rc.URL
	}
	return "local:" + rc.Path
}
