package cmd

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

func listCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "list the IDs of the repository's objects of one type, one a line (restic's list)",
		ArgsUsage: "snapshots|index|packs|keys|locks|blobs",
		Flags:     repoFlags(),
		Action:    runList,
	}
}

// listTypes are the types list takes, by the name it takes them by.
var listTypes = map[string]repo.FileType{
	"snapshots": repo.SnapshotFile,
	"index":     repo.IndexFile,
	"packs":     repo.PackFile,
	"keys":      repo.KeyFile,
	"locks":     repo.LockFile,
}

// listTypeNames is what list takes, for messages.
const listTypeNames = "snapshots, index, packs, keys, locks or blobs"

func listArgs(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", usageError{fmt.Errorf("list needs exactly one type: %s", listTypeNames)}
	}
	t := c.Args().First()
	if _, ok := listTypes[t]; !ok && t != "blobs" {
		return "", usageError{fmt.Errorf("cannot list %q: want %s", t, listTypeNames)}
	}
	return t, nil
}

func runList(c *cli.Context) error { return withRepository(c, listArgs, listIn) }

// listIn prints the names of the objects of type t, sorted; for blobs,
// restic's "TYPE ID" lines, from the index.
func listIn(c *cli.Context, p *printer, r *repo.Repository, t string) error {
	if t == "blobs" {
		if err := r.LoadIndex(c.Context); err != nil {
			return err
		}
		var lines []string
		if err := r.Index().Each(func(b repo.IndexedBlob) { lines = append(lines, b.Type.String()+" "+b.ID.String()) }); err != nil {
			return err
		}
		sort.Strings(lines)
		p.Printf("%s", joinLines(lines))
		return nil
	}
	names, err := listNames(c, r, listTypes[t])
	if err != nil {
		return err
	}
	p.Printf("%s", joinLines(names))
	return nil
}

// listNames returns the names of the objects of type t, sorted.
func listNames(c *cli.Context, r *repo.Repository, t repo.FileType) ([]string, error) {
	var names []string
	err := r.Backend().List(c.Context, t, func(name string, _ int64) error {
		names = append(names, name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", t, err)
	}
	slices.Sort(names)
	return names, nil
}

// joinLines is lines, each ended by a line break.
func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
