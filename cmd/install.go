package cmd

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
)

// installTargets are the schedulers install prints for, each named after
// the scheduler (cron serves Linux and the BSDs alike).
const installTargets = "cron, systemd, launchd or task-scheduler"

func installCommand() *cli.Command {
	return &cli.Command{
		Name:      "install",
		Usage:     "print what runs nightjar tick every minute: a crontab line, systemd units, a launchd plist or a Task Scheduler command",
		ArgsUsage: "cron|systemd|launchd|task-scheduler",
		Flags:     configFlags(),
		Action:    runInstall,
	}
}

// installPlan is what an install prints: the program, the config and
// state it is given, and who it runs as.
type installPlan struct {
	exe          string // nightjar's absolute path
	config       string // the config in use, absolute
	configSource string // where the config's name came from, said in the output
	state        string // --state or NIGHTJAR_STATE; "": tick's own resolution
	root         bool   // installed by root: a system-wide job
	home         string // the user's home folder (launchd's user agent)
	uid          int    // the user's ID (launchctl's gui domain)
}

func runInstall(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError{fmt.Errorf("install needs one of %s", installTargets)}
	}
	var render func(io.Writer, installPlan)
	switch target := c.Args().First(); target {
	case "cron":
		render = cronInstall
	case "systemd":
		render = systemdInstall
	case "launchd":
		render = launchdInstall
	case "task-scheduler":
		render = taskSchedulerInstall
	default:
		return usageError{fmt.Errorf("install %q: want %s", target, installTargets)}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find nightjar's path: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	plan := installPlan{exe: exe, state: c.String("state"), root: os.Geteuid() == 0, uid: os.Getuid()}
	if plan.state != "" {
		// The scheduled tick runs in another folder (cron: $HOME, launchd:
		// /, Task Scheduler: System32): a relative state file would be a
		// new, empty one there.
		abs, err := filepath.Abs(plan.state)
		if err != nil {
			return fmt.Errorf("state %s: %w", plan.state, err)
		}
		plan.state = abs
	}
	plan.config, plan.configSource = installConfig(c)
	plan.home, _ = os.UserHomeDir()
	if _, err := os.Stat(plan.config); err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		newPrinter(c).Warnf("config %s (%s): %v: the scheduled tick fails until it can read it; name another with --config FILE", plan.config, plan.configSource, err)
	}
	render(c.App.Writer, plan)
	return nil
}

// installConfig is the config tick is to read, absolute, and where its
// name came from: --config, NIGHTJAR_CONFIG, or the default for the user.
func installConfig(c *cli.Context) (path, source string) {
	path, source = c.String("config"), "from --config"
	switch {
	case path == "":
		path, source = defaultConfigPath(), "the default for this user"
		if os.Geteuid() == 0 {
			source = "the default for root"
		}
	case path == os.Getenv("NIGHTJAR_CONFIG"):
		source = "from NIGHTJAR_CONFIG"
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path, source
}

// tickArgs are the arguments of the scheduled tick.
func (p installPlan) tickArgs() []string {
	args := []string{"tick", "--config", p.config}
	if p.state != "" {
		args = append(args, "--state", p.state)
	}
	return args
}

// shellLine is the scheduled command as a shell reads it (crontab,
// ExecStart).
func (p installPlan) shellLine() string {
	words := []string{shellQuote(p.exe)}
	for _, a := range p.tickArgs() {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

func cronInstall(w io.Writer, p installPlan) {
	fmt.Fprintf(w, "# nightjar: one scheduler pass every minute, with the config %s (%s).\n", p.config, p.configSource)
	fmt.Fprintf(w, "# cron mails whatever a command prints: tick prints nothing on a pass with nothing to report\n")
	fmt.Fprintf(w, "# when it is not on a terminal, and one line when a run failed or was partial, so mail comes then.\n")
	fmt.Fprintf(w, "# Several passes may overlap safely: the state database hands each job to one of them.\n")
	fmt.Fprintf(w, "* * * * * %s\n", p.shellLine())
}

func systemdInstall(w io.Writer, p installPlan) {
	fmt.Fprintf(w, `# /etc/systemd/system/nightjar.service
# The config is %s (%s).
[Unit]
Description=nightjar scheduler pass
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
ExecStart=%s
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
`, p.config, p.configSource, p.shellLine())
}

// launchdLabel names nightjar's launchd job, and its plist file.
const launchdLabel = "com.github.nightjar-backup.nightjar.tick"

// launchdPaths are where the plist goes, where tick's output goes and the
// command that loads it: a daemon in the system domain for root, a user
// agent in the user's gui domain otherwise.
func (p installPlan) launchdPaths() (plist, log, load string) {
	if p.root {
		plist = "/Library/LaunchDaemons/" + launchdLabel + ".plist"
		return plist, "/Library/Logs/nightjar.log", "sudo launchctl bootstrap system " + shellQuote(plist)
	}
	plist = filepath.Join(p.home, "Library", "LaunchAgents", launchdLabel+".plist")
	log = filepath.Join(p.home, "Library", "Logs", "nightjar.log")
	return plist, log, fmt.Sprintf("launchctl bootstrap gui/%d %s", p.uid, shellQuote(plist))
}

func launchdInstall(w io.Writer, p installPlan) {
	plist, log, load := p.launchdPaths()
	kind := "a user agent: it runs while you are logged in"
	if p.root {
		kind = "a daemon: it runs as root whether or not anyone is logged in"
	}
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!--
  %s
  nightjar: one scheduler pass every minute, with the config
    %s
  This is %s. Save it as
    %s
  and load it with
    %s
  (launchctl bootout with the same arguments unloads it). launchd starts no
  second pass while one runs; tick writes its output to %s.
-->
`, xmlComment(launchdLabel), xmlComment(p.config), kind, xmlComment(plist), xmlComment(load), xmlComment(log))
	fmt.Fprintf(w, "<plist version=\"1.0\">\n<dict>\n")
	plistString(w, "Label", launchdLabel)
	fmt.Fprintf(w, "\t<key>ProgramArguments</key>\n\t<array>\n")
	for _, a := range append([]string{p.exe}, p.tickArgs()...) {
		fmt.Fprintf(w, "\t\t<string>%s</string>\n", xmlText(a))
	}
	fmt.Fprintf(w, "\t</array>\n")
	fmt.Fprintf(w, "\t<key>StartInterval</key>\n\t<integer>60</integer>\n")
	// A shutdown gives running backups 30 s to record themselves as
	// interrupted, as the systemd unit does (TimeoutStopSec).
	fmt.Fprintf(w, "\t<key>ExitTimeOut</key>\n\t<integer>35</integer>\n")
	plistString(w, "ProcessType", "Background")
	fmt.Fprintf(w, "\t<key>LowPriorityIO</key>\n\t<true/>\n")
	fmt.Fprintf(w, "\t<key>Nice</key>\n\t<integer>10</integer>\n")
	plistString(w, "StandardOutPath", log)
	plistString(w, "StandardErrorPath", log)
	fmt.Fprintf(w, "</dict>\n</plist>\n")
}

func plistString(w io.Writer, key, value string) {
	fmt.Fprintf(w, "\t<key>%s</key>\n\t<string>%s</string>\n", xmlText(key), xmlText(value))
}

// xmlText escapes s for XML character data.
func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// xmlComment makes s, a name or path, safe inside an XML comment, which
// must not hold "--": a space goes between the dashes.
func xmlComment(s string) string {
	for strings.Contains(s, "--") {
		s = strings.ReplaceAll(s, "--", "- -")
	}
	return s
}

// taskSchedulerName names nightjar's task in the Task Scheduler.
const taskSchedulerName = "nightjar tick"

func taskSchedulerInstall(w io.Writer, p installPlan) {
	var tr []string
	for _, a := range append([]string{p.exe}, p.tickArgs()...) {
		tr = append(tr, windowsQuote(a))
	}
	run := strings.ReplaceAll(strings.Join(tr, " "), `"`, `\"`)
	fmt.Fprintf(w, "REM nightjar: one scheduler pass every minute, with the config %s (%s).\n", p.config, p.configSource)
	fmt.Fprintf(w, "REM Run this in cmd.exe. As it stands the task runs while you are logged on, in a console\n")
	fmt.Fprintf(w, "REM window that flashes each minute; add /RU \"%%USERNAME%%\" /RP to give your password once and\n")
	fmt.Fprintf(w, "REM have it run whether or not you are logged on, without a window. Task Scheduler starts no\n")
	fmt.Fprintf(w, "REM second pass while one runs. Remove it with: schtasks /Delete /F /TN \"%s\"\n", taskSchedulerName)
	if len(run) > taskRunMax {
		fmt.Fprintf(w, "REM The command is %d characters, more than the %d schtasks takes: put nightjar or the config in a shorter path.\n", len(run), taskRunMax)
	}
	fmt.Fprintf(w, "schtasks /Create /F /TN \"%s\" /SC MINUTE /MO 1 /TR \"%s\"\n", taskSchedulerName, run)
}

// taskRunMax is the longest command (/TR) schtasks takes.
const taskRunMax = 261

// windowsQuote quotes s for a Windows command line when it needs it: in
// double quotes if it holds a space or a tab (a Windows path cannot hold
// a double quote).
func windowsQuote(s string) string {
	if s == "" || strings.ContainsAny(s, " \t") {
		return `"` + s + `"`
	}
	return s
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
