package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
)

func installCommand() *cli.Command {
	return &cli.Command{
		Name:      "install",
		Usage:     "print a crontab line or systemd units that run nightjar tick every minute",
		ArgsUsage: "cron|systemd",
		Flags:     configFlags(),
		Action:    runInstall,
	}
}

func runInstall(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError{errors.New("install needs cron or systemd")}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find nightjar's path: %w", err)
	}
	exe, _ = filepath.EvalSymlinks(exe)
	cfg := c.String("config")
	if cfg == "" {
		cfg = defaultConfigPath()
	}
	if abs, err := filepath.Abs(cfg); err == nil {
		cfg = abs
	}
	args := fmt.Sprintf("tick --config %s", shellQuote(cfg))
	if st := c.String("state"); st != "" {
		args += " --state " + shellQuote(st)
	}
	w := c.App.Writer
	switch c.Args().First() {
	case "cron":
		fmt.Fprintf(w, "# nightjar: one scheduler pass every minute; cron mails the output of a failed pass.\n")
		fmt.Fprintf(w, "# Several passes may overlap safely: the state database hands each job to one of them.\n")
		fmt.Fprintf(w, "* * * * * %s %s\n", shellQuote(exe), args)
	case "systemd":
		fmt.Fprintf(w, `# /etc/systemd/system/nightjar.service
[Unit]
Description=nightjar scheduler pass
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
ExecStart=%s %s
# A shutdown gives running backups 30 s to record themselves as interrupted.
TimeoutStopSec=35
KillSignal=SIGTERM
Nice=10
IOSchedulingClass=idle

# /etc/systemd/system/nightjar.timer
[Unit]
Description=run the nightjar scheduler every minute

[Timer]
OnCalendar=*-*-* *:*:00
AccuracySec=1s
Persistent=true

[Install]
WantedBy=timers.target

# Enable with: systemctl daemon-reload && systemctl enable --now nightjar.timer
`, exe, args)
	default:
		return usageError{fmt.Errorf("install %q: want cron or systemd", c.Args().First())}
	}
	return nil
}

// shellQuote quotes s for a crontab or ExecStart line when it needs it.
func shellQuote(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '.' || c == '-' || c == '_') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
