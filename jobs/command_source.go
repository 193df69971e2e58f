package jobs

import (
	"context"
	"errors"
	"path"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/repo"
)

// commandSource backs up the standard output of src's command as one file
// (backup.Stream), streamed as the command writes it (StartCommand). The
// command runs with the run's environment (as a hook, with NIGHTJAR_SOURCE
// its name), in the hooks' folder, and src.Timeout. When it cannot start,
// exits with a failure, is stopped or leaves a process holding its output
// open, the error is a *CommandError with the end of its standard error,
// and no snapshot is saved; its standard error goes to the run's output in
// any case.
func (e *Executor) commandSource(ctx context.Context, r *repo.Repository, src SourceSpec, opts backup.StreamOptions, h *hookRun) (*backup.Result, error) {
	name := path.Base(src.Path)
	what := "command source " + name
	env := append(h.env("", nil, nil), "NIGHTJAR_SOURCE="+name)
	in, err := StartCommand(ctx, Command{What: what, Argv: src.Command, Env: env, Dir: h.hooks.Dir, Timeout: src.Timeout})
	if err != nil {
		var cerr *CommandError
		if errors.As(err, &cerr) {
			h.section(what+" (standard error)", commandReason(cerr), "")
		}
		return nil, err
	}
	res, err := backup.Stream(ctx, r, in, opts)
	// The repository failed, or the backup was cancelled: Close stops
	// the command, which may be blocked writing.
	in.Close()
	status := "ok"
	if cerr := in.Err(); cerr != nil {
		status = commandReason(cerr)
	}
	if text := in.Stderr(); text != "" || in.Err() != nil {
		h.section(what+" (standard error)", status, text)
	}
	return res, err
}

// commandReason says how a command source failed, for its skipped
// object's reason and the run's output.
func commandReason(cerr *CommandError) string {
	if cerr.TimedOut {
		return hookReason(&CommandError{TimedOut: true, Timeout: cerr.Timeout, Tail: cerr.Tail})
	}
	return "command failed: " + hookReason(&CommandError{Err: cerr.Err, Tail: cerr.Tail})
}
