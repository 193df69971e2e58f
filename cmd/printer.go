package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
)

// printer writes a command's output. With jsonOut set, only JSON documents
// go to stdout; human-readable text and progress go to stderr or nowhere.
type printer struct {
	stdout  io.Writer
	stderr  io.Writer
	jsonOut bool
	quiet   bool         // --quiet: no human-readable output either (warnings and JSON still go out)
	warnLog *slog.Logger // with --log-format json, where warnings go as records; nil: as text
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
	if p.warnLog != nil {
		p.warnLog.Warn(fmt.Sprintf(format, args...))
		return
	}
	fmt.Fprintf(p.stderr, "warning: "+format+"\n", args...)
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
		p.warnLog.Warn(fmt.Sprintf(format, args...), "run", id, "job", job)
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
