package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/nightjar-backup/nightjar/redact"
)

// isTerminal reports whether w is a terminal. It is a variable so that
// tests can make a buffer look like one.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// humanTimeLayout is how human output prints an instant: in local time,
// to the second, as restic's tables do.
const humanTimeLayout = "2006-01-02 15:04:05"

// humanTime is the one rule for times in human output (tables and lines):
// local time, to the second. JSON output has RFC 3339 in UTC instead.
func humanTime(t time.Time) string {
	return t.Local().Format(humanTimeLayout)
}

// printer writes a command's output. With jsonOut set, only JSON documents
// go to stdout; human-readable text and progress go to stderr or nowhere.
type printer struct {
	stdout  io.Writer
	stderr  io.Writer
	jsonOut bool
	quiet   bool         // --quiet: no human-readable output either (warnings and JSON still go out)
	warnLog *slog.Logger // with --log-format json, where warnings go as records; nil: as text
	// redactor says what warnings must not show (URLs, and the secrets of
	// the config once one is loaded); nil: URLs only.
	redactor func() redact.Redactor
}

// redact takes out of a warning what p's redactor says.
func (p *printer) redact(msg string) string {
	if p.redactor == nil {
		return redact.Text(msg)
	}
	return p.redactor().Text(msg)
}

// Printf writes human-readable output; it is suppressed in JSON mode.
func (p *printer) Printf(format string, args ...any) {
	if p.jsonOut || p.quiet {
		return
	}
	fmt.Fprintf(p.stdout, format, args...)
}

// Warnf writes a warning to stderr in both modes.
func (p *printer) Warnf(format string, args ...any) {
	msg := p.redact(fmt.Sprintf(format, args...))
	if p.warnLog != nil {
		// JSON quotes every control character: the record is printed
		// as it is.
		p.warnLog.Warn(msg)
		return
	}
	fmt.Fprintf(p.stderr, "warning: %s\n", terminalSafeText(msg))
}

// JSONLine writes v as one line of JSON on stdout, for commands that print
// a stream of objects (backup --json: status objects, then the summary);
// it is a no-op in text mode.
func (p *printer) JSONLine(v any) error {
	if !p.jsonOut {
		return nil
	}
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = p.stdout.Write(append(line, '\n'))
	return err
}

// WarnRunf writes a warning about run id of job: as Warnf, and with the
// run and job as keys of the record in the JSON log format.
func (p *printer) WarnRunf(id int64, job, format string, args ...any) {
	if p.warnLog != nil {
		p.warnLog.Warn(p.redact(fmt.Sprintf(format, args...)), "run", id, "job", job)
		return
	}
	p.Warnf(format, args...)
}

// JSON writes v as one JSON document on stdout; it is a no-op in text mode.
func (p *printer) JSON(v any) error {
	if !p.jsonOut {
		return nil
	}
	enc := json.NewEncoder(p.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
