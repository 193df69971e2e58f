package cmd

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

// version is set at build time with -ldflags "-X .../cmd.version=...".
var version = "dev"

// versionCommandName is the command that says which nightjar this is;
// commandLine turns --version before a command into it.
const versionCommandName = "version"

// oldestRepositoryVersion is the oldest repository (config) version
// nightjar opens: repo reads every version from it up to
// repo.ConfigVersion, and refuses a version below it as damage.
const oldestRepositoryVersion = 1

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:      versionCommandName,
		Usage:     "print nightjar's version, the repository format versions it reads and writes, and how it was built",
		ArgsUsage: " ",
		Flags:     []cli.Flag{jsonFlag()},
		Action:    runVersion,
	}
}

// versionJSON is the --json document of version; the fields restic's
// version --json has keep restic's names.
type versionJSON struct {
	MessageType string `json:"message_type"` // "version"
	Version     string `json:"version"`
	// RepositoryVersions are the repository versions opened (read and
	// written); NewRepositoryVersion is the one init makes.
	RepositoryVersions   []int  `json:"repository_versions"`
	NewRepositoryVersion int    `json:"new_repository_version"`
	ObjectFormat         int    `json:"object_format"` // the version of every object's header line
	GoVersion            string `json:"go_version"`
	GoOS                 string `json:"go_os"`
	GoArch               string `json:"go_arch"`
}

func runVersion(c *cli.Context) error {
	v := versionJSON{MessageType: "version", Version: buildVersion(), NewRepositoryVersion: repo.ConfigVersion,
		ObjectFormat: repo.FormatVersion, GoVersion: runtime.Version(), GoOS: runtime.GOOS, GoArch: runtime.GOARCH}
	for n := oldestRepositoryVersion; n <= repo.ConfigVersion; n++ {
		v.RepositoryVersions = append(v.RepositoryVersions, n)
	}
	w := c.App.Writer
	if c.Bool("json") {
		return json.NewEncoder(w).Encode(v)
	}
	_, err := fmt.Fprintf(w, "nightjar %s\nrepository format: versions %d to %d read and written, new repositories version %d, objects version %d\nbuilt with %s for %s/%s\n",
		v.Version, oldestRepositoryVersion, repo.ConfigVersion, v.NewRepositoryVersion, v.ObjectFormat, v.GoVersion, v.GoOS, v.GoArch)
	return err
}

// buildVersion is the version set at build time, else the module version
// go install recorded, else "dev".
func buildVersion() string {
	if version != "dev" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return version
}
