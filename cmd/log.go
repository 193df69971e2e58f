package cmd

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/redact"
)

// Log formats and the environment variables of the log flags.
const (
	logFormatText = "text"
	logFormatJSON = "json"
	logFormatEnv  = "NIGHTJAR_LOG_FORMAT"
	logLevelEnv   = "NIGHTJAR_LOG_LEVEL"
)

var (
	logFormats = []string{logFormatText, logFormatJSON}
	logLevels  = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}
)

// logFlags are the global flags that shape the logs of every command.
func logFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "log-format", EnvVars: []string{logFormatEnv}, Value: logFormatText,
			Usage: "write logs and warnings to stderr as `FORMAT` text or json (one JSON object a line)"},
		&cli.StringFlag{Name: "log-level", EnvVars: []string{logLevelEnv},
			Usage: "log the scheduler's decisions from `LEVEL` debug, info, warn or error on (default: none; info with -v)"},
	}
}

// logFormatKey is where checkLogFlags leaves the log format in the app's
// Metadata, for Main's last error line.
const logFormatKey = "log-format"

// checkLogFlags refuses a log format or level that does not exist, and
// notes the format for Main.
func checkLogFlags(c *cli.Context) error {
	f := c.String("log-format")
	if !slices.Contains(logFormats, f) {
		return usageError{fmt.Errorf("invalid --log-format %q: want text or json", f)}
	}
	c.App.Metadata[logFormatKey] = f
	if l := c.String("log-level"); l != "" {
		if _, ok := logLevels[l]; !ok {
			return usageError{fmt.Errorf("invalid --log-level %q: want debug, info, warn or error", l)}
		}
	}
	return nil
}

// printError writes the error a command ended with to stderr: a line of
// text, or in the JSON log format a record of level error with the exit
// code, so that a log collector reading serve's JSON can parse its last
// words too.
func printError(app *cli.App, stderr io.Writer, msg string, code int) {
	msg = appRedactor(app).Text(msg)
	if app.Metadata[logFormatKey] == logFormatJSON {
		slog.New(logHandler(logFormatJSON, stderr, slog.LevelError, func() redact.Redactor { return appRedactor(app) })).Error("nightjar: "+msg, "exit_code", code)
		return
	}
	fmt.Fprintf(stderr, "nightjar: %s\n", terminalSafeText(msg))
}

// newLogger is the logger of the scheduler's passes (tick, serve, job run
// --wait, drill): to w in the --log-format, from the --log-level on, or
// from info when verbose; without either, nothing is logged. The secrets
// of cfg (password files' paths and password commands) are redacted from
// every record.
func newLogger(c *cli.Context, w io.Writer, verbose bool, cfg *config.Config) *slog.Logger {
	level, ok := logLevels[c.String("log-level")]
	if !ok && !verbose {
		return slog.New(slog.DiscardHandler)
	}
	if !ok {
		level = slog.LevelInfo
	}
	secrets := redact.New(configSecrets(cfg)...)
	return slog.New(logHandler(c.String("log-format"), w, level, func() redact.Redactor { return secrets }))
}

// warningLogger is where a command's warnings go in the JSON log format
// (as records of level warn, whatever --log-level says: they are the
// command's output); nil in the text format, where they stay lines of
// text.
func warningLogger(c *cli.Context, w io.Writer) *slog.Logger {
	if c.String("log-format") != logFormatJSON {
		return nil
	}
	return slog.New(logHandler(logFormatJSON, w, slog.LevelWarn, func() redact.Redactor { return appRedactor(c.App) }))
}

// logHandler is a handler of format to w from level on that takes out of
// every record what redactor (asked at each record) says; nil: URLs only.
func logHandler(format string, w io.Writer, level slog.Level, redactor func() redact.Redactor) slog.Handler {
	if redactor == nil {
		redactor = func() redact.Redactor { return redact.Redactor{} }
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: redactAttr(redactor)}
	if format == logFormatJSON {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// configSecrets lists what no output may show of cfg: each repository's
// password file path and password command.
func configSecrets(cfg *config.Config) []string {
	if cfg == nil {
		return nil
	}
	var secrets []string
	for _, r := range cfg.Repositories {
		secrets = append(secrets, r.Password.File, r.Password.Command)
	}
	return secrets
}

// secretsKey is where newApp leaves, in the app's Metadata, the redactor
// of the secrets of every config the command loaded (rememberSecrets), so
// that its warnings and its last error line are redacted of them too.
const secretsKey = "secrets"

// newSecrets is the Metadata entry of secretsKey: serve reloads its config
// while its warnings are written, hence the atomic pointer.
func newSecrets() *atomic.Pointer[redact.Redactor] {
	var p atomic.Pointer[redact.Redactor]
	p.Store(&redact.Redactor{})
	return &p
}

// rememberSecrets adds cfg's secrets to those the app's output is
// redacted of; those of a config read before stay.
func rememberSecrets(app *cli.App, cfg *config.Config) {
	p, ok := app.Metadata[secretsKey].(*atomic.Pointer[redact.Redactor])
	if !ok {
		return
	}
	r := p.Load().With(configSecrets(cfg)...)
	p.Store(&r)
}

// appRedactor redacts the app's output: URLs always, and the secrets of
// the configs the command loaded.
func appRedactor(app *cli.App) redact.Redactor {
	if p, ok := app.Metadata[secretsKey].(*atomic.Pointer[redact.Redactor]); ok {
		return *p.Load()
	}
	return redact.Redactor{}
}

// redactAttr takes what redactor says out of every string and error of a
// record, its message included.
func redactAttr(redactor func() redact.Redactor) func([]string, slog.Attr) slog.Attr {
	return func(_ []string, a slog.Attr) slog.Attr {
		switch a.Value.Kind() {
		case slog.KindString:
			a.Value = slog.StringValue(redactor().Text(a.Value.String()))
		case slog.KindAny:
			if err, ok := a.Value.Any().(error); ok {
				a.Value = slog.StringValue(redactor().Text(err.Error()))
			}
		}
		return a
	}
}
