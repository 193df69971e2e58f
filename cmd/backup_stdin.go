package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/jobs"
)

// stdinFlags are backup's flags for a snapshot of one stream, as restic
// has them.
func stdinFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "stdin", Usage: "back up standard input as one file (see --stdin-filename)"},
		&cli.StringFlag{Name: "stdin-filename", Value: "stdin", Usage: "the file `NAME` standard input (or the command's output) gets in the snapshot, at its root"},
		&cli.BoolFlag{Name: "stdin-from-command", Usage: "run the arguments as a command and back up its standard output; a command that fails saves no snapshot"},
	}
}

// streamSource returns what backup reads for --stdin or
// --stdin-from-command (nil: neither is set), with the stream's options.
// Options that only make sense for paths are refused.
func streamSource(c *cli.Context) (func(ctx context.Context) (io.Reader, func(), error), string, error) {
	fromStdin, fromCommand := c.Bool("stdin"), c.Bool("stdin-from-command")
	if !fromStdin && !fromCommand {
		if c.IsSet("stdin-filename") {
			return nil, "", errors.New("--stdin-filename needs --stdin or --stdin-from-command")
		}
		return nil, "", nil
	}
	name := c.String("stdin-filename")
	if err := backup.ValidStreamName(name); err != nil {
		return nil, "", fmt.Errorf("invalid --stdin-filename: %w", err)
	}
	for _, flag := range []string{"exclude", "exclude-file", "parent"} {
		if c.IsSet(flag) {
			return nil, "", fmt.Errorf("--%s is for paths: a stream is backed up as one file", flag)
		}
	}
	switch {
	case fromStdin && fromCommand:
		return nil, "", errors.New("--stdin and --stdin-from-command exclude each other: the command's output is the input")
	case fromStdin && c.NArg() > 0:
		return nil, "", fmt.Errorf("backup --stdin takes no PATH (got %s): it reads standard input", strings.Join(c.Args().Slice(), " "))
	case fromStdin:
		return func(context.Context) (io.Reader, func(), error) {
			return c.App.Reader, func() {}, nil
		}, name, nil
	case c.NArg() == 0:
		return nil, "", errors.New("backup --stdin-from-command needs the command as its arguments, such as: -- pg_dump mydb")
	}
	argv := c.Args().Slice()
	return func(ctx context.Context) (io.Reader, func(), error) { return startStreamCommand(ctx, c, argv) }, name, nil
}

// startStreamCommand starts argv (jobs.StartCommand: in a process group of
// its own, with nightjar's environment without its passwords) with its
// standard output on a pipe that backup reads; its standard error is
// nightjar's. The reader fails at its end when the command did not exit
// with status 0, so that backup saves no snapshot of a dump cut short;
// stop stops the command's group and waits for it when the backup ended
// before the output did.
func startStreamCommand(ctx context.Context, c *cli.Context, argv []string) (io.Reader, func(), error) {
	out, err := jobs.StartCommand(ctx, jobs.Command{
		What: "command " + argv[0], Argv: argv, Env: jobs.ScrubEnviron(os.Environ()), Stderr: c.App.ErrWriter,
	})
	if err != nil {
		return nil, nil, err
	}
	return &streamCommand{out}, func() { out.Close() }, nil
}

// streamCommand says, when the command failed, that no snapshot was saved.
type streamCommand struct{ out *jobs.CommandOutput }

func (s *streamCommand) Read(b []byte) (int, error) {
	n, err := s.out.Read(b)
	if err != nil && err != io.EOF {
		return n, fmt.Errorf("%w: no snapshot was saved", err)
	}
	return n, err
}

// backupStream backs up the stream start gives as one file.
func backupStream(c *cli.Context, r backup.Repository, start func(ctx context.Context) (io.Reader, func(), error), opts backup.StreamOptions) (*backup.Result, error) {
	in, stop, err := start(c.Context)
	if err != nil {
		return nil, err
	}
	defer stop()
	return backup.Stream(c.Context, r, in, opts)
}
