package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/repo"
)

// commandSource backs up the standard output of src's command as one file
// (backup.Stream), streamed as the command writes it. The command runs
// with the run's environment (as a hook, with NIGHTJAR_SOURCE its name)
// and src.Timeout. When it cannot start, exits with a failure or is
// stopped, the error is a *CommandError with the end of its standard
// error, and no snapshot is saved; its standard error goes to the run's
// output in any case.
func (e *Executor) commandSource(ctx context.Context, r *repo.Repository, src SourceSpec, opts backup.StreamOptions, h *hookRun) (*backup.Result, error) {
	name := path.Base(src.Path)
	what := "command source " + name
	stderr := newTailBuffer(MaxCommandOutput)
	env := append(h.env("", nil, nil), "NIGHTJAR_SOURCE="+name)
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer pr.Close()
	p, err := startProcess(ctx, what, src.Command, env, src.Timeout, func(cmd *exec.Cmd) error {
		// The pipe itself, not a copy: the command's output is read as
		// it comes, and to its end whenever the command exits.
		cmd.Stdout, cmd.Stderr = pw, stderr
		return nil
	})
	pw.Close() // the command holds its own copy
	if err != nil {
		var cerr *CommandError
		if errors.As(err, &cerr) {
			h.section(what+" (standard error)", commandReason(cerr), "")
		}
		return nil, err
	}
	in := &commandOutput{r: pr, p: p, stderr: stderr}
	res, err := backup.Stream(ctx, r, in, opts)
	var cerr *CommandError
	switch {
	case in.err != nil:
		cerr = in.err
	case err != nil:
		// The repository failed, or the backup was cancelled: stop the
		// command, which may be blocked writing.
		p.abort()
	}
	status := "ok"
	if cerr != nil {
		cerr.Tail = tailLine(stderr.String(), tailInMessage)
		status = commandReason(cerr)
	}
	if text := stderr.String(); text != "" || cerr != nil {
		h.section(what+" (standard error)", status, text)
	}
	return res, err
}

// commandOutput reads a command's standard output; at its end it waits for
// the command, and a command that failed makes the read fail, so that
// backup.Stream saves no snapshot of it.
type commandOutput struct {
	r      io.Reader
	p      *process
	stderr *tailBuffer
	err    *CommandError
}

func (c *commandOutput) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if err != io.EOF {
		return n, err
	}
	if cerr := c.p.wait(); cerr != nil {
		cerr.Tail = tailLine(c.stderr.String(), tailInMessage)
		c.err = cerr
		return n, cerr
	}
	return n, io.EOF
}

// commandReason says how a command source failed, for its skipped
// object's reason and the run's output.
func commandReason(cerr *CommandError) string {
	if cerr.TimedOut {
		return hookReason(&CommandError{TimedOut: true, Timeout: cerr.Timeout, Tail: cerr.Tail})
	}
	return "command failed: " + hookReason(&CommandError{Err: cerr.Err, Tail: cerr.Tail})
}
