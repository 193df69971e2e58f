package cmd

import (
	"errors"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

func keyCommand() *cli.Command {
	newPasswordFlag := &cli.StringFlag{Name: "new-password-file", EnvVars: []string{"NIGHTJAR_NEW_PASSWORD_FILE"},
		Usage: "read the new password from `FILE`"}
	return &cli.Command{
		Name:  "key",
		Usage: "manage the passwords that open a repository",
		Subcommands: []*cli.Command{
			{
				Name: "list", Usage: "list the keys", ArgsUsage: " ",
				Flags: append(repoFlags(), jsonFlag()), Action: runKeyList,
			},
			{
				Name: "add", Usage: "add a password", ArgsUsage: " ",
				Flags: append(repoFlags(), newPasswordFlag, jsonFlag()), Action: runKeyAdd,
			},
			{
				Name: "remove", Usage: "remove a key (not the one in use)", ArgsUsage: "KEY-ID",
				Flags: repoFlags(), Action: runKeyRemove,
			},
			{
				Name: "passwd", Usage: "change the password in use (data is not re-encrypted)", ArgsUsage: " ",
				Flags: append(repoFlags(), newPasswordFlag, jsonFlag()), Action: runKeyPasswd,
			},
		},
	}
}

// newPasswordSources names the ways to give a new password without a
// terminal: deliberately none that puts it in argv.
const newPasswordSources = "--new-password-file FILE or NIGHTJAR_NEW_PASSWORD_FILE"

type keyJSON struct {
	ID       string `json:"id"`
	Current  bool   `json:"current"`
	Created  string `json:"created"`
	Hostname string `json:"hostname"`
	Username string `json:"username"`
}

func runKeyList(c *cli.Context) error {
	p := newPrinter(c)
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	infos, err := r.ListKeys(c.Context)
	if err != nil {
		return err
	}
	out := []keyJSON{}
	for _, k := range infos {
		out = append(out, keyJSON{ID: k.Name, Current: k.Name == r.KeyName(), Created: k.Created.UTC().Format(time.RFC3339),
			Hostname: k.Hostname, Username: k.Username})
	}
	if p.jsonOut {
		return p.JSON(out)
	}
	p.Printf("  %-8s  %-19s  %s\n", "ID", "Created", "User@Host")
	for i, k := range out {
		mark := " "
		if k.Current {
			mark = "*"
		}
		p.Printf("%s %-8s  %-19s  %s@%s\n", mark, k.ID[:8], humanTime(infos[i].Created), k.Username, k.Hostname)
	}
	p.Printf("* the key in use: the password given opens it\n")
	return nil
}

func runKeyAdd(c *cli.Context) error {
	return withNewKey(c, func(r *repo.Repository, pw []byte) (string, error) {
		info, err := r.AddKey(c.Context, pw, repo.KDFParams{})
		return info.Name, err
	}, "added key %s\n")
}

// withNewKey opens the repository and writes a key for a new password
// with write; it prints the new key's ID with format. The new password
// comes from --new-password-file, read before the repository is opened,
// or is typed twice at a terminal after the password in use.
func withNewKey(c *cli.Context, write func(*repo.Repository, []byte) (string, error), format string) error {
	p := newPrinter(c)
	var pw []byte
	if file := c.String("new-password-file"); file != "" {
		var err error
		if pw, err = readPasswordFile(file, "the --new-password-file", p.Warnf); err != nil {
			return err
		}
	} else if !hasTerminal(c) {
		return usageError{errors.New("no new password given: use " + newPasswordSources + ", or type it at a terminal")}
	}
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	if pw == nil {
		if pw, err = askNewPassword(c, "enter new password: ", newPasswordSources); err != nil {
			return err
		}
	}
	name, err := write(r, pw)
	if err != nil {
		return err
	}
	p.Printf(format, name)
	return p.JSON(map[string]string{"id": name})
}

func runKeyRemove(c *cli.Context) error {
	p := newPrinter(c)
	if c.NArg() != 1 {
		return usageError{errors.New("key remove needs exactly one KEY-ID (nightjar key list shows them)")}
	}
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	removed, err := r.RemoveKey(c.Context, c.Args().First())
	if err != nil {
		return err
	}
	p.Printf("removed key %s\n", removed)
	return nil
}

func runKeyPasswd(c *cli.Context) error {
	return withNewKey(c, func(r *repo.Repository, pw []byte) (string, error) {
		info, err := r.ChangePassword(c.Context, pw, repo.KDFParams{})
		return info.Name, err
	}, "password changed: key %s replaces the old one\n")
}
