package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

func pinCommand() *cli.Command {
	return &cli.Command{
		Name:      "pin",
		Usage:     "keep a snapshot from every forget, whatever the policy",
		ArgsUsage: "SNAPSHOT",
		Flags: append(repoFlags(),
			&cli.StringFlag{Name: "reason", Usage: "why the snapshot is kept: `TEXT` shown by snapshots"},
			jsonFlag(),
		),
		Action: runPin,
	}
}

func unpinCommand() *cli.Command {
	return &cli.Command{
		Name:      "unpin",
		Usage:     "let forget's policy decide about a pinned snapshot again",
		ArgsUsage: "SNAPSHOT",
		Flags:     append(repoFlags(), jsonFlag()),
		Action:    runUnpin,
	}
}

// pinOptions is what pin and unpin were asked to do.
type pinOptions struct {
	Ref    string // an ID, a unique prefix of one, or latest
	Reason string
}

// pinJSON is the outcome of pin and unpin in --json.
type pinJSON struct {
	ID       string     `json:"id"`
	Pinned   bool       `json:"pinned"`
	Reason   string     `json:"pin_reason,omitempty"`
	Hostname string     `json:"hostname,omitempty"`
	Username string     `json:"username,omitempty"`
	Time     *time.Time `json:"time,omitempty"`
}

func pinArgs(c *cli.Context) (pinOptions, error) {
	if c.NArg() != 1 {
		return pinOptions{}, usageError{fmt.Errorf("%s needs exactly one SNAPSHOT (an ID, a prefix of one, or latest)", c.Command.Name)}
	}
	reason := c.String("reason")
	if len(reason) > maxPinReason || strings.ContainsFunc(reason, unicode.IsControl) || !utf8.ValidString(reason) {
		return pinOptions{}, usageError{fmt.Errorf("--reason must be one line of text of at most %d bytes", maxPinReason)}
	}
	return pinOptions{Ref: c.Args().First(), Reason: reason}, nil
}

// maxPinReason bounds a pin's reason: it is shown on a line of snapshots.
const maxPinReason = 500

func runPin(c *cli.Context) error { return withRepository(c, pinArgs, pinIn) }

// pinIn is pin on the open repository r.
func pinIn(c *cli.Context, p *printer, r *repo.Repository, opts pinOptions) error {
	pin, err := pinSnapshot(c.Context, r, opts)
	if err != nil {
		return err
	}
	p.Printf("pinned snapshot %s\n", shortID(pin.Snapshot))
	return p.JSON(pinJSON{ID: pin.Snapshot, Pinned: true, Reason: pin.Reason, Hostname: pin.Hostname,
		Username: pin.Username, Time: &pin.Time})
}

func runUnpin(c *cli.Context) error { return withRepository(c, pinArgs, unpinIn) }

// unpinIn is unpin on the open repository r.
func unpinIn(c *cli.Context, p *printer, r *repo.Repository, opts pinOptions) error {
	id, err := unpinSnapshot(c.Context, r, opts)
	if err != nil {
		return err
	}
	p.Printf("unpinned snapshot %s\n", shortID(id))
	return p.JSON(pinJSON{ID: id, Pinned: false})
}

// pinSnapshot pins the snapshot opts.Ref names.
func pinSnapshot(ctx context.Context, r *repo.Repository, opts pinOptions) (*repo.Pin, error) {
	snap, err := r.FindSnapshot(ctx, opts.Ref, nil)
	if err != nil {
		return nil, err
	}
	pin, err := r.Pin(ctx, snap.ID, opts.Reason)
	return pin, busyHint(err)
}

// unpinSnapshot removes the pin of the snapshot opts.Ref names, and returns
// its ID. A pin whose snapshot is gone is found by its ID or a unique
// prefix of it, so that it can be removed too.
func unpinSnapshot(ctx context.Context, r *repo.Repository, opts pinOptions) (string, error) {
	id := ""
	snap, err := r.FindSnapshot(ctx, opts.Ref, nil)
	switch {
	case err == nil:
		id = snap.ID
	case errors.Is(err, repo.ErrSnapshotNotFound) && opts.Ref != "latest":
		pinned, perr := r.PinnedIDs(ctx)
		if perr != nil {
			return "", perr
		}
		var match []string
		for _, p := range pinned {
			if strings.HasPrefix(p, opts.Ref) {
				match = append(match, p)
			}
		}
		if len(match) != 1 {
			return "", err
		}
		id = match[0]
	default:
		return "", err
	}
	return id, busyHint(r.Unpin(ctx, id))
}

// busyHint adds to a busy repository's error that the command can be run
// again, as lockRepo does.
func busyHint(err error) error {
	if errors.Is(err, repo.ErrBusy) {
		return fmt.Errorf("%w (try again when it is done)", err)
	}
	return err
}

// snapshotPins returns the pins of the repository by snapshot ID. Where a
// pin is damaged it warns and still marks every pinned snapshot, without
// reasons: what pins a snapshot is the pin's name.
func snapshotPins(ctx context.Context, r *repo.Repository, p *printer) (map[string]*repo.Pin, error) {
	pins, err := r.Pins(ctx)
	if !errors.Is(err, repo.ErrIntegrity) {
		return pins, err
	}
	p.Warnf("%v: pin reasons are not shown (run nightjar check)", err)
	ids, err := r.PinnedIDs(ctx)
	if err != nil {
		return nil, err
	}
	pins = make(map[string]*repo.Pin, len(ids))
	for _, id := range ids {
		pins[id] = &repo.Pin{Snapshot: id}
	}
	return pins, nil
}
