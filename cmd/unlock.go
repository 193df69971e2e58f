package cmd

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

func unlockCommand() *cli.Command {
	return &cli.Command{
		Name:  "unlock",
		Usage: "remove the locks whose holder is provably gone (a process of this host that ended), and say which locks stay and why",
		Flags: append(repoFlags(),
			&cli.BoolFlag{Name: "remove-all", Usage: "remove every lock, also those of processes still at work (restic's flag): their work then goes on unprotected"},
		),
		Action: runUnlock,
	}
}

func unlockArgs(c *cli.Context) (bool, error) {
	if c.NArg() > 0 {
		return false, usageError{fmt.Errorf("unlock takes no arguments, got %q", c.Args().First())}
	}
	return c.Bool("remove-all"), nil
}

func runUnlock(c *cli.Context) error { return withRepository(c, unlockArgs, unlockIn) }

// unlockIn removes the locks of r that RemoveLocks may remove and prints a
// line for each lock: removed, or kept with its holder and age.
func unlockIn(c *cli.Context, p *printer, r *repo.Repository, all bool) error {
	if all {
		p.Warnf("--remove-all removes the locks of processes still at work too: what they do is no longer protected from prune or forget")
	}
	states, err := r.RemoveLocks(c.Context, all)
	for _, st := range states {
		switch {
		case st.Removed && st.Alive:
			p.Printf("removed lock %s of a live process: %s\n", shortName(st.Name), lockHolder(st))
		case st.Removed:
			p.Printf("removed lock %s: its holder is gone (%s)\n", shortName(st.Name), lockHolder(st))
		case st.OtherHost:
			p.Printf("kept lock %s: taken on another host, where this one cannot tell whether its holder is gone (%s); remove it with --remove-all once it is\n",
				shortName(st.Name), lockHolder(st))
		default:
			p.Printf("kept lock %s: its holder is still at work (%s)\n", shortName(st.Name), lockHolder(st))
		}
	}
	if err != nil {
		return err
	}
	removed := 0
	for _, st := range states {
		if st.Removed {
			removed++
		}
	}
	p.Printf("removed %d locks, kept %d\n", removed, len(states)-removed)
	return nil
}

// lockHolder says who holds a lock, for what, and since how long.
func lockHolder(st repo.LockState) string {
	if st.InfoErr != nil {
		return "content unreadable: " + errorMessage(st.InfoErr)
	}
	kind := "shared"
	if st.Info.Exclusive {
		kind = "exclusive"
	}
	age := time.Since(st.Info.Time).Truncate(time.Second)
	return fmt.Sprintf("%s lock for %s by pid %d of %s@%s, taken %s ago", kind, st.Info.Purpose, st.Info.PID,
		st.Info.Username, st.Info.Hostname, age)
}

// shortName is the first 8 characters of an object's name.
func shortName(name string) string {
	if len(name) > 8 {
		return name[:8]
	}
	return name
}
