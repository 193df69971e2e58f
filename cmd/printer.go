package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/nightjar-backup/nightjar/redact"
)

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
		p.warnLog.Warn(msg)
		return
	}
	fmt.Fprintf(p.stderr, "warning: %s\n", msg)
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
