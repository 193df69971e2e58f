package cmd

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

func findEntriesCommand() *cli.Command {
	return &cli.Command{
		Name:  "find",
		Usage: "find files and folders by name in snapshots",
		Description: "A PATTERN is a glob (*, ?, [...]). Without a slash it matches an entry's name;\n" +
			"with one, its whole path in the snapshot (/home/*/notes.txt). Every snapshot is\n" +
			"searched, or those --snapshot names, or those --path/--tag/--host select.",
		ArgsUsage: "PATTERN...",
		Flags: append(append(readRepoFlags(),
			&cli.StringSliceFlag{Name: "snapshot", Aliases: []string{"s"}, Usage: "search only snapshot `ID` (repeatable)"},
			&cli.BoolFlag{Name: "ignore-case", Aliases: []string{"i"}, Usage: "match names regardless of case"},
			jsonFlag(),
		), snapshotSelectFlags()...),
		Action: runFind,
	}
}

// findMatchJSON is one entry find --json found.
type findMatchJSON struct {
	Path       string    `json:"path"`               // with U+FFFD for bytes that are not UTF-8
	PathRaw    []byte    `json:"path_raw,omitempty"` // the exact bytes, base64, when Path is not valid UTF-8
	Type       string    `json:"type"`
	Mode       string    `json:"permissions"`
	Size       uint64    `json:"size"`
	MTime      time.Time `json:"mtime"`
	User       string    `json:"user,omitempty"`
	Group      string    `json:"group,omitempty"`
	LinkTarget string    `json:"link_target,omitempty"`
}

// findSnapshotJSON is what find --json found in one snapshot, as restic
// groups it.
type findSnapshotJSON struct {
	Snapshot string          `json:"snapshot"`
	Hits     int             `json:"hits"`
	Matches  []findMatchJSON `json:"matches"`
}

// namePattern is one PATTERN of find.
type namePattern struct {
	glob       string
	wholePath  bool // the pattern has a slash: it matches the whole path
	ignoreCase bool
}

func compileNamePatterns(args []string, ignoreCase bool) ([]namePattern, error) {
	var out []namePattern
	for _, a := range args {
		glob := a
		if ignoreCase {
			glob = strings.ToLower(glob)
		}
		if _, err := path.Match(glob, ""); err != nil {
			return nil, fmt.Errorf("pattern %q: %w (allowed: *, ?, [...] and \\ to escape)", a, err)
		}
		out = append(out, namePattern{glob: glob, wholePath: strings.Contains(a, "/"), ignoreCase: ignoreCase})
	}
	return out, nil
}

// matches reports whether the entry at p (a snapshot path) matches.
func (m namePattern) matches(p string) bool {
	subject := path.Base(p)
	if m.wholePath {
		subject = p
	}
	if m.ignoreCase {
		subject = strings.ToLower(subject)
	}
	ok, _ := path.Match(m.glob, subject)
	return ok
}

func runFind(c *cli.Context) error {
	p := newPrinter(c)
	if c.NArg() == 0 {
		return usageError{errors.New("find needs at least one PATTERN (a glob: *.txt, /home/*/notes)")}
	}
	patterns, err := compileNamePatterns(c.Args().Slice(), c.Bool("ignore-case"))
	if err != nil {
		return usageError{err}
	}
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.LoadIndex(c.Context); err != nil {
		return err
	}
	snaps, err := selectSnapshots(c, r, c.StringSlice("snapshot"))
	if err != nil {
		return err
	}
	out := []findSnapshotJSON{}
	hits := 0
	for _, s := range snaps {
		found := findSnapshotJSON{Snapshot: s.ID, Matches: []findMatchJSON{}}
		err := r.Walk(c.Context, s.Tree, repo.WalkOptions{}, repo.WalkVisitor{Node: func(e *repo.WalkEntry) error {
			for _, m := range patterns {
				if !m.matches(e.Path) {
					continue
				}
				n := e.Node
				match := findMatchJSON{Path: e.Path, Type: n.Type, Mode: modeString(n), Size: n.Size, MTime: n.MTime,
					User: n.User, Group: n.Group, LinkTarget: n.LinkTarget}
				if !utf8.ValidString(e.Path) {
					match.PathRaw = []byte(e.Path)
				}
				found.Hits++
				if p.jsonOut {
					found.Matches = append(found.Matches, match)
				}
				p.Printf("%s  %s %8s %s %s\n", shortID(s.ID), match.Mode, humanize.IBytes(n.Size),
					n.MTime.Local().Format("2006-01-02 15:04"), terminalSafe(e.Path))
				break
			}
			return nil
		}})
		if err != nil {
			return fmt.Errorf("find in snapshot %s: %w", shortID(s.ID), err)
		}
		hits += found.Hits
		if found.Hits > 0 {
			out = append(out, found)
		}
	}
	if p.jsonOut {
		return p.JSON(out)
	}
	p.Printf("%d matches in %d of %d snapshots\n", hits, len(out), len(snaps))
	return nil
}
