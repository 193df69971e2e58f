package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Hooks are the commands a job's backup runs run around their work
// ([job.hooks]); runs of other kinds run none. Each is an argv (a shell
// string is the shell: ["/bin/sh", "-c", TEXT], or cmd.exe /C on Windows); nil: none.
type Hooks struct {
	Before    []string // before the backup; its failure fails the run (class source) and nothing is backed up
	After     []string // after the backup, whatever happened (but not when before failed); its failure makes a succeeded run partial
	OnSuccess []string // once the run's status is known: succeeded
	OnFailure []string // ... failed
	OnPartial []string // ... partial_failure
	Timeout   time.Duration
	// Dir is the working folder of the hooks and of the job's command
	// sources (cmd: the config file's folder, against which a relative
	// program such as ./dump.sh is found); "": nightjar's.
	Dir string
}

// JobHooks gives the hooks of a job by its name.
type JobHooks func(job string) Hooks

// DefaultHookTimeout is a hook's timeout when the job names none.
const DefaultHookTimeout = 5 * time.Minute

// MaxCommandOutput is how much of each hook's output (standard output and
// error together), and of each command source's standard error, is kept
// with the run: the end of it.
const MaxCommandOutput = 64 << 10

// Hook names, as the config's keys and NIGHTJAR_HOOK say them.
const (
	HookBefore    = "before"
	HookAfter     = "after"
	HookOnSuccess = "on_success"
	HookOnFailure = "on_failure"
	HookOnPartial = "on_partial"
)

// Error codes of hooks.
const (
	CodeHookFailed  = "HOOK_FAILED"  // the before hook could not start or exited with a failure
	CodeHookTimeout = "HOOK_TIMEOUT" // the before hook did not end within its timeout
)

// tailInMessage bounds the end of a command's output quoted in a message
// or a skipped object's reason.
const tailInMessage = 400

// hookRun runs the hooks of one backup run and collects the output of its
// hooks and command sources.
type hookRun struct {
	e      *Executor
	job    pass.JobDef
	run    pass.Run
	hooks  Hooks
	output strings.Builder
}

func (e *Executor) newHookRun(job pass.JobDef, run pass.Run) *hookRun {
	h := &hookRun{e: e, job: job, run: run}
	if e.Hooks != nil {
		h.hooks = e.Hooks(job.Name)
	}
	h.hooks.Timeout = cmp.Or(h.hooks.Timeout, DefaultHookTimeout)
	return h
}

// backupRun runs a backup run with its job's hooks: before, then the
// backup of the sources (backupSources), then after, then the one of
// on_success, on_failure and on_partial that the run's status calls for
// (pass.Judge: the status the pass records). The output of the hooks and
// of the command sources is the result's Output.
func (e *Executor) backupRun(ctx context.Context, job pass.JobDef, run pass.Run, progress func(pass.Progress)) (pass.Result, error) {
	h := e.newHookRun(job, run)
	var res pass.Result
	err := h.before(ctx, progress)
	if err == nil {
		res, err = e.backupSources(ctx, job, run, progress, h)
		res = h.after(ctx, res, err, progress)
	}
	h.onStatus(ctx, res, err, progress)
	res.Output = h.output.String()
	return res, err
}

// before runs the before hook; its failure is the run's, class source.
func (h *hookRun) before(ctx context.Context, progress func(pass.Progress)) error {
	if h.hooks.Before == nil {
		return nil
	}
	progress(pass.Progress{Current: "hook " + HookBefore})
	cerr := h.runHook(ctx, nil, HookBefore, h.hooks.Before, h.env(HookBefore, nil, nil))
	switch {
	case cerr == nil:
		return nil
	case ctx.Err() != nil:
		return &pass.ClassError{Class: pass.ClassCancelled, Code: pass.CodeCancelled, Err: ctx.Err()}
	case cerr.TimedOut:
		return &pass.ClassError{Class: pass.ClassSource, Code: CodeHookTimeout, Err: fmt.Errorf("%w: nothing was backed up", cerr)}
	}
	return &pass.ClassError{Class: pass.ClassSource, Code: CodeHookFailed, Err: fmt.Errorf("%w: nothing was backed up", cerr)}
}

// after runs the after hook whatever the backup did, also when the run was
// cancelled: it undoes what before did (a database stopped, a snapshot
// mounted), so a cancellation does not stop it; its timeout does, and
// after a shutdown the pass's deadline (pass.Shutdown). Its failure makes
// a run that would succeed or be partial partial, as a skipped object
// "hook after"; a failed run stays failed, and a run the pass records
// cancelled or interrupted stays so.
func (h *hookRun) after(ctx context.Context, res pass.Result, err error, progress func(pass.Progress)) pass.Result {
	if h.hooks.After == nil {
		return res
	}
	v := h.verdict(ctx, res, err)
	progress(pass.Progress{Figures: res.Figures.Clone(), Current: "hook " + HookAfter})
	cerr := h.runHook(context.WithoutCancel(ctx), ctx, HookAfter, h.hooks.After, h.env(HookAfter, &v, res.Snapshots))
	if cerr != nil && err == nil && pass.StoppedStatus(ctx, err) == "" {
		res.Figures.FilesSkipped++
		res.Figures.Skipped = append(res.Figures.Skipped, pass.Skipped{Object: "hook " + HookAfter, Reason: hookReason(cerr)})
	}
	return res
}

// onStatus runs the hook for the run's status, once it is known: the
// status the pass records (pass.Judge), unless the pass records the run
// cancelled or interrupted (pass.StoppedStatus), for which none runs. It
// runs whatever ends the run's context meanwhile (a shutdown after the
// backup's work was done does not change the status), within its timeout
// and a shutdown's deadline. Its failure changes no status: it is noted
// in the output.
func (h *hookRun) onStatus(ctx context.Context, res pass.Result, err error, progress func(pass.Progress)) {
	if pass.StoppedStatus(ctx, err) != "" {
		return
	}
	v := pass.Judge(res, err)
	var name string
	var argv []string
	switch v.Status {
	case pass.StatusSucceeded:
		name, argv = HookOnSuccess, h.hooks.OnSuccess
	case pass.StatusFailed:
		name, argv = HookOnFailure, h.hooks.OnFailure
	case pass.StatusPartialFailure:
		name, argv = HookOnPartial, h.hooks.OnPartial
	}
	if argv == nil {
		return
	}
	progress(pass.Progress{Figures: res.Figures.Clone(), Current: "hook " + name})
	if cerr := h.runHook(context.WithoutCancel(ctx), ctx, name, argv, h.env(name, &v, res.Snapshots)); cerr != nil {
		fmt.Fprintf(&h.output, "warning: hook %s failed; the run's status stays %s\n", name, v.Status)
	}
}

// verdict is the run's status so far, for the after hook: as the pass
// will record it (cancelled, interrupted, or pass.Judge's).
func (h *hookRun) verdict(ctx context.Context, res pass.Result, err error) pass.Verdict {
	switch pass.StoppedStatus(ctx, err) {
	case pass.StatusCancelled:
		return pass.Verdict{Status: pass.StatusCancelled, Class: pass.ClassCancelled, Code: pass.CodeCancelled, Message: "cancelled"}
	case pass.StatusInterrupted:
		return pass.Verdict{Status: pass.StatusInterrupted, Class: pass.ClassCancelled, Code: pass.CodeInterrupted, Message: "interrupted by shutdown"}
	}
	return pass.Judge(res, err)
}

// shutdownDeadline is when a command run after ctx ended by a shutdown
// must have ended (pass.Shutdown); zero: no such bound.
func shutdownDeadline(ctx context.Context) time.Time {
	var shutdown *pass.Shutdown
	if errors.As(context.Cause(ctx), &shutdown) {
		return shutdown.Deadline
	}
	return time.Time{}
}

// runHook runs one hook to its end, within the hooks' timeout, and writes
// its output to the run's. A hook that outlives the cancellation of the
// run's context run (after, on_*; nil for before) is bounded by the
// deadline of a shutdown that ended it, or that ends it meanwhile.
func (h *hookRun) runHook(ctx, run context.Context, name string, argv, env []string) *CommandError {
	out := newTailBuffer(MaxCommandOutput)
	var cerr *CommandError
	spec := commandSpec{what: name + " hook", argv: argv, env: env, dir: h.hooks.Dir, timeout: h.hooks.Timeout}
	if run != nil {
		spec.killBy, spec.run = shutdownDeadline(run), run
	}
	p, err := startProcess(ctx, spec, func(cmd *exec.Cmd) error {
		cmd.Stdout, cmd.Stderr = out, out
		return nil
	})
	if err != nil {
		errors.As(err, &cerr)
	} else {
		cerr = p.wait()
	}
	text := out.String()
	status := "ok"
	if cerr != nil {
		cerr.Tail = tailLine(text, tailInMessage)
		status = hookReason(&CommandError{Err: cerr.Err, TimedOut: cerr.TimedOut, Timeout: cerr.Timeout})
	}
	h.section("hook "+name, status, text)
	return cerr
}

// hookReason says how a command failed, for a skipped object's reason:
// the error without naming the command.
func hookReason(cerr *CommandError) string {
	var msg string
	if cerr.TimedOut {
		msg = fmt.Sprintf("did not end within %s and was stopped", cerr.Timeout)
	} else {
		msg = fmt.Sprint(cerr.Err)
	}
	if cerr.Tail != "" {
		msg += ": " + cerr.Tail
	}
	return msg
}

// section adds one command's output to the run's, under a heading line.
func (h *hookRun) section(title, status, text string) {
	fmt.Fprintf(&h.output, "== %s: %s\n", title, status)
	if text != "" {
		h.output.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			h.output.WriteByte('\n')
		}
	}
}

// env is the environment of a hook (or, hook "", a command source) of the run: the
// executor's Environ (the scheduler's own, without passwords) and the
// run's NIGHTJAR_* variables; for after and on_*, also the status so far
// and the snapshots made.
func (h *hookRun) env(hook string, v *pass.Verdict, snaps []pass.SnapshotRef) []string {
	vars := [][2]string{
		{"NIGHTJAR_JOB", h.job.Name},
		{"NIGHTJAR_RUN_ID", strconv.FormatInt(h.run.ID, 10)},
		{"NIGHTJAR_RUN_KIND", cmp.Or(h.run.Kind, pass.KindBackup)},
		{"NIGHTJAR_REPOSITORY", h.job.Repository},
		{"NIGHTJAR_ATTEMPT", strconv.Itoa(max(h.run.Attempt, 1))},
	}
	if hook != "" {
		vars = append(vars, [2]string{"NIGHTJAR_HOOK", hook})
	}
	if v != nil {
		ids := make([]string, 0, len(snaps))
		for _, s := range snaps {
			ids = append(ids, s.SnapshotID)
		}
		vars = append(vars,
			[2]string{"NIGHTJAR_STATUS", v.Status},
			[2]string{"NIGHTJAR_SNAPSHOT_IDS", strings.Join(ids, " ")},
			[2]string{"NIGHTJAR_ERROR_CLASS", v.Class},
			[2]string{"NIGHTJAR_ERROR_CODE", v.Code},
			[2]string{"NIGHTJAR_ERROR", v.Message})
	}
	env := ScrubEnviron(h.e.Environ)
	kept := env[:0]
	for _, kv := range env {
		// The run's variables replace any the scheduler was given.
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains(hookVariables, name) {
			kept = append(kept, kv)
		}
	}
	for _, kv := range vars {
		kept = append(kept, kv[0]+"="+kv[1])
	}
	return kept
}

// hookVariables are the variables a hook's environment has of its run.
var hookVariables = []string{"NIGHTJAR_JOB", "NIGHTJAR_RUN_ID", "NIGHTJAR_RUN_KIND", "NIGHTJAR_REPOSITORY",
	"NIGHTJAR_ATTEMPT", "NIGHTJAR_HOOK", "NIGHTJAR_SOURCE", "NIGHTJAR_STATUS", "NIGHTJAR_SNAPSHOT_IDS",
	"NIGHTJAR_ERROR_CLASS", "NIGHTJAR_ERROR_CODE", "NIGHTJAR_ERROR"}

// ScrubEnviron returns env without the variables that may hold a
// repository's password: every NIGHTJAR_PASSWORD* variable and the ones
// named (the repositories' password_env). Hooks and command sources start
// from it, so that none of them is ever handed a password.
func ScrubEnviron(env []string, secret ...string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "NIGHTJAR_PASSWORD") || slices.Contains(secret, name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
