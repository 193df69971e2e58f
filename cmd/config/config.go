package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/nightjar-backup/nightjar/backup/limit"
	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/notify"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Config is a loaded, validated config.
type Config struct {
	Path         string // the file it came from
	StatePath    string // "" when the config names none: the caller picks the default
	Limits       pass.Limits
	Heartbeat    time.Duration
	StaleAfter   time.Duration
	TickInterval time.Duration
	Grace        time.Duration // how late a slot may be noticed and still count as on time
	OfflineAfter time.Duration // scheduler.offline_after: no pass for longer is scheduler_offline
	ProbeEvery   time.Duration // scheduler.probe_every: how often passes probe each repository
	History      History       // how long ended runs and audit rows are kept (history.go)
	Repositories map[string]Repository
	Windows      []schedule.Window
	Jobs         []Job // in file order

	Notify  notify.Route // the [notify] table: what every job's runs tell
	Metrics Metrics
}

// Repository is a [repository.NAME] table.
type Repository struct {
	Name              string
	Path              string
	Password          PasswordSource
	CreateIfMissing   bool
	MaxConcurrentRuns int
	Prune             *pass.JobDef     // its maintenance, from the prune key (pass.PruneJob); nil: none
	Compression       repo.Compression // how the scheduler's backups compress
	// DeepVerifyEvery is the longest a job's snapshots go without a deep
	// verification (deep_verify_every): 0 "always", negative "never".
	DeepVerifyEvery time.Duration
	// URL is the location of a repository on other storage than a local
	// folder ("s3:https://host/bucket"), set instead of Path.
	URL string
	// Options are the settings of its storage that its location cannot
	// carry (the s3 table, upload_bandwidth, download_bandwidth).
	Options backend.Options
}

// PasswordSource says where a repository's password comes from: exactly one
// field is set.
type PasswordSource struct {
	File    string
	Command string
	Env     string
	// CommandTimeout is how long Command may run before it is killed
	// (password_command_timeout; default secret.DefaultCommandTimeout).
	CommandTimeout time.Duration
}

// Job is a [[job]] table.
type Job struct {
	Def     pass.JobDef
	Drill   *pass.JobDef // its drills, from the drill key (pass.DrillJob); nil: none
	Sources []Source
	Tags    []string
	RPO     time.Duration
	Hooks   jobs.Hooks   // its backup runs' [job.hooks]
	Notify  notify.Route // where its runs are told: [notify] with its [job.notify] over it
}

// Source is a [[job.source]] table.
type Source struct {
	Path    string // a command source's is "/" + its name: its path in the snapshot
	Exclude []string
	Command []string      // a command source's argv (a shell string: ShellArgv); nil: a path
	Timeout time.Duration // a command source's; 0: none
}

// Defaults of the [scheduler] table. Those of heartbeat, stale_after and
// on_time_grace are the pass's (pass.DefaultHeartbeat and so on).
const (
	DefaultTickInterval      = 10 * time.Second
	DefaultMaxConcurrentRuns = 2
	DefaultRunsPerRepository = 1
	DefaultRunsPerSource     = 1
)

// ErrInvalid marks a config that failed validation; Problems lists every
// problem, one line each.
type ErrInvalid struct {
	Path     string
	Problems []string
}

func (e *ErrInvalid) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0]
	}
	return fmt.Sprintf("%s (and %d more problems: nightjar config validate lists them)\n%s",
		e.Problems[0], len(e.Problems)-1, strings.Join(e.Problems[1:], "\n"))
}

type rawConfig struct {
	Scheduler  rawScheduler             `toml:"scheduler"`
	Repository map[string]rawRepository `toml:"repository"`
	Window     []rawWindow              `toml:"window"`
	Job        []rawJob                 `toml:"job"`
	Notify     *rawNotify               `toml:"notify"`
	Metrics    rawMetrics               `toml:"metrics"`
}

type rawScheduler struct {
	State             string `toml:"state"`
	MaxConcurrentRuns *int   `toml:"max_concurrent_runs"`
	MaxRunsPerSource  *int   `toml:"max_runs_per_source"`
	Heartbeat         string `toml:"heartbeat"`
	StaleAfter        string `toml:"stale_after"`
	TickInterval      string `toml:"tick_interval"`
	OnTimeGrace       string `toml:"on_time_grace"`
	OfflineAfter      string `toml:"offline_after"`
	ProbeEvery        string `toml:"probe_every"`
	KeepRuns          string `toml:"keep_runs"`
	KeepAudit         string `toml:"keep_audit"`
}

type rawRepository struct {
	Path              string `toml:"path"`
	PasswordFile      string `toml:"password_file"`
	PasswordCommand   string `toml:"password_command"`
	PasswordEnv       string `toml:"password_env"`
	PasswordTimeout   string `toml:"password_command_timeout"`
	CreateIfMissing   bool   `toml:"create_if_missing"`
	Prune             string `toml:"prune"`     // when its maintenance runs, as a job's schedule
	TimeZone          string `toml:"time_zone"` // the zone of prune
	MaxConcurrentRuns *int   `toml:"max_concurrent_runs"`
	Compression       string `toml:"compression"`
	DeepVerifyEvery   string `toml:"deep_verify_every"`
	URL               string `toml:"url"`
	S3                *rawS3 `toml:"s3"`
	UploadBandwidth   string `toml:"upload_bandwidth"`
	DownloadBandwidth string `toml:"download_bandwidth"`
}

type rawWindow struct {
	Name     string   `toml:"name"`
	Kind     string   `toml:"kind"`
	Start    string   `toml:"start"`
	Duration string   `toml:"duration"`
	TimeZone string   `toml:"time_zone"`
	From     string   `toml:"from"`
	Until    string   `toml:"until"`
	Jobs     []string `toml:"jobs"`
}

type rawJob struct {
	Name       string      `toml:"name"`
	Repository string      `toml:"repository"`
	Schedule   string      `toml:"schedule"`
	TimeZone   string      `toml:"time_zone"`
	Priority   string      `toml:"priority"`
	Bandwidth  string      `toml:"bandwidth"`
	RPO        string      `toml:"rpo"`
	CatchUp    string      `toml:"catch_up"`
	DependsOn  []string    `toml:"depends_on"`
	Retry      *rawRetry   `toml:"retry"`
	Tags       []string    `toml:"tags"`
	Drill      string      `toml:"drill"` // when its restore drills run, as its schedule
	Source     []rawSource `toml:"source"`
	Retention  any         `toml:"retention"` // "off" or a table of rules
	Verify     string      `toml:"verify"`    // "on" (the default) or "off"
	Hooks      *rawHooks   `toml:"hooks"`
	Notify     *rawNotify  `toml:"notify"`
}

type rawRetry struct {
	Attempts *int   `toml:"attempts"`
	Initial  string `toml:"initial"`
	Max      string `toml:"max"`
	Jitter   *bool  `toml:"jitter"`
}

type rawSource struct {
	Path    string   `toml:"path"`
	Command any      `toml:"command"` // an argv list or a shell string
	Name    string   `toml:"name"`    // a command source's file
	Timeout string   `toml:"timeout"` // a command source's
	Exclude []string `toml:"exclude"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// loader collects problems with their lines.
type loader struct {
	file     string
	lines    lineIndex
	dir      string
	problems []string
}

func (l *loader) addf(key, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	line := l.lines.line(key)
	shown := displayKey(key)
	if line > 0 {
		l.problems = append(l.problems, fmt.Sprintf("%s:%d: %s: %s", l.file, line, shown, msg))
	} else {
		l.problems = append(l.problems, fmt.Sprintf("%s: %s: %s", l.file, shown, msg))
	}
}

// displayKey turns "job.2.schedule" into "job[2].schedule" for messages.
func displayKey(key string) string {
	parts := strings.Split(key, ".")
	var b strings.Builder
	for i, p := range parts {
		if _, err := fmt.Sscanf(p, "%d", new(int)); err == nil && i > 0 && !strings.ContainsAny(p, "abcdefghijklmnopqrstuvwxyz") {
			b.WriteString("[" + p + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// abs resolves a path relative to the config file's folder.
func (l *loader) abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(l.dir, p)
}

func (l *loader) duration(key, text string, def time.Duration) time.Duration {
	if text == "" {
		return def
	}
	d, err := schedule.ParseDuration(text)
	if err != nil {
		l.addf(key, "%v", err)
		return def
	}
	return d
}

// Load reads and validates the config at path; now anchors RPO and window
// checks. Every problem found is reported in one *ErrInvalid.
func Load(path string, now time.Time) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(abs, string(data), now)
	if err != nil {
		return nil, err
	}
	if err := checkMode(abs, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Parse validates config text as if read from path.
func Parse(path, text string, now time.Time) (*Config, error) {
	l := &loader{file: path, lines: indexLines(text), dir: filepath.Dir(path)}
	var raw rawConfig
	md, err := toml.Decode(text, &raw)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return nil, &ErrInvalid{Path: path, Problems: []string{fmt.Sprintf("%s:%d: %s", path, perr.Position.Line, firstLine(perr.Message))}}
		}
		return nil, &ErrInvalid{Path: path, Problems: []string{fmt.Sprintf("%s: %v", path, err)}}
	}
	reported := map[string]bool{}
	for _, k := range md.Undecoded() {
		// The decoder names a key of an array of tables once per element,
		// without the element's number: find reports every element.
		if reported[strings.Join(k, ".")] {
			continue
		}
		if len(k) > 2 && k[0] == "job" && k[1] == "retention" {
			continue // a job's retention table is checked by retention, key by key
		}
		reported[strings.Join(k, ".")] = true
		keys := l.lines.find(strings.Join(k, "."))
		if len(keys) == 0 {
			keys = []string{strings.Join(k, ".")}
		}
		for _, key := range keys {
			l.addf(key, "unknown key (allowed here: %s)", allowedKeys(k))
		}
	}
	cfg := &Config{Path: path, Repositories: map[string]Repository{}}
	l.scheduler(raw.Scheduler, cfg)
	l.history(raw.Scheduler, cfg)
	l.repositories(raw.Repository, cfg)
	l.globalNotify(raw.Notify, cfg)
	l.jobs(raw.Job, cfg, now)
	l.windows(raw.Window, cfg)
	l.dependencies(cfg)
	l.reachable(cfg, now)
	l.metrics(raw.Metrics, cfg)
	if len(l.problems) > 0 {
		return nil, &ErrInvalid{Path: path, Problems: l.problems}
	}
	return cfg, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// allowedKeys names the keys allowed in the table that holds key k.
func allowedKeys(k toml.Key) string {
	tables := map[string][]string{
		"scheduler":  {"state", "max_concurrent_runs", "max_runs_per_source", "heartbeat", "stale_after", "tick_interval", "on_time_grace", "offline_after", "probe_every", "keep_runs", "keep_audit"},
		"repository": {"path", "password_file", "password_command", "password_command_timeout", "password_env", "create_if_missing", "max_concurrent_runs", "compression", "deep_verify_every", "prune", "time_zone", "url", "s3", "upload_bandwidth", "download_bandwidth"},
		"window":     {"name", "kind", "start", "duration", "time_zone", "from", "until", "jobs"},
		"job":        {"name", "repository", "schedule", "time_zone", "priority", "bandwidth", "rpo", "catch_up", "depends_on", "retry", "tags", "source", "retention", "verify", "drill", "hooks", "notify"},
		"job.retry":  {"attempts", "initial", "max", "jitter"},
		"job.source": {"path", "exclude", "command", "name", "timeout"},
		"job.hooks":  hookKeys,
		"job.notify": notifyKeys,
		"notify":     notifyKeys,
		"metrics":    {"textfile", "listen"},
		"top":        {"scheduler", "repository", "window", "job", "notify", "metrics"},
	}
	var table string
	switch {
	case len(k) == 1:
		table = "top"
	case k[0] == "job" && len(k) >= 3 && (k[1] == "retry" || k[1] == "source" || k[1] == "hooks" || k[1] == "notify"):
		table = "job." + k[1]
	case k[0] == "repository" && len(k) >= 4 && k[2] == "s3":
		return strings.Join(s3Keys, ", ")
	default:
		table = k[0]
	}
	if keys, ok := tables[table]; ok {
		return strings.Join(keys, ", ")
	}
	return strings.Join(tables["top"], ", ")
}

func (l *loader) scheduler(raw rawScheduler, cfg *Config) {
	cfg.StatePath = l.abs(raw.State)
	cfg.Heartbeat = l.duration("scheduler.heartbeat", raw.Heartbeat, pass.DefaultHeartbeat)
	cfg.StaleAfter = l.duration("scheduler.stale_after", raw.StaleAfter, pass.DefaultStaleAfter)
	cfg.TickInterval = l.duration("scheduler.tick_interval", raw.TickInterval, DefaultTickInterval)
	cfg.Grace = l.duration("scheduler.on_time_grace", raw.OnTimeGrace, pass.DefaultGrace)
	if err := pass.CheckStaleAfter(cfg.Heartbeat, cfg.StaleAfter); err != nil {
		l.addf("scheduler.stale_after", "%v", err)
	}
	l.statusSettings(raw, cfg)
	cfg.Limits = pass.Limits{Global: DefaultMaxConcurrentRuns, PerSource: DefaultRunsPerSource, PerRepository: map[string]int{}}
	if raw.MaxConcurrentRuns != nil {
		if *raw.MaxConcurrentRuns < 1 || *raw.MaxConcurrentRuns > 1000 {
			l.addf("scheduler.max_concurrent_runs", "%d is not allowed: want 1 to 1000", *raw.MaxConcurrentRuns)
		}
		cfg.Limits.Global = *raw.MaxConcurrentRuns
	}
	if raw.MaxRunsPerSource != nil {
		if *raw.MaxRunsPerSource < 1 || *raw.MaxRunsPerSource > 1000 {
			l.addf("scheduler.max_runs_per_source", "%d is not allowed: want 1 to 1000", *raw.MaxRunsPerSource)
		}
		cfg.Limits.PerSource = *raw.MaxRunsPerSource
	}
}

func (l *loader) repositories(raws map[string]rawRepository, cfg *Config) {
	names := make([]string, 0, len(raws))
	for name := range raws {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		raw := raws[name]
		key := "repository." + name
		if !nameRE.MatchString(name) {
			l.addf(key, "repository name %q: want letters, digits, '.', '-' or '_' (at most 64)", name)
		}
		r := Repository{Name: name, Path: l.abs(raw.Path), CreateIfMissing: raw.CreateIfMissing, MaxConcurrentRuns: DefaultRunsPerRepository}
		l.storage(key, raw, &r)
		r.Password = PasswordSource{File: l.abs(raw.PasswordFile), Command: raw.PasswordCommand, Env: raw.PasswordEnv}
		set := 0
		for _, v := range []string{raw.PasswordFile, raw.PasswordCommand, raw.PasswordEnv} {
			if v != "" {
				set++
			}
		}
		if set != 1 {
			l.addf(key, "set exactly one of password_file, password_command or password_env (a password is never written in the config)")
		}
		r.Password.CommandTimeout = l.passwordTimeout(key, raw)
		r.Prune = l.maintenance(key, name, raw)
		if raw.MaxConcurrentRuns != nil {
			if *raw.MaxConcurrentRuns < 1 || *raw.MaxConcurrentRuns > 1000 {
				l.addf(key+".max_concurrent_runs", "%d is not allowed: want 1 to 1000", *raw.MaxConcurrentRuns)
			}
			r.MaxConcurrentRuns = *raw.MaxConcurrentRuns
		}
		r.Compression = repo.DefaultCompression
		if raw.Compression != "" {
			c, err := repo.ParseCompression(raw.Compression)
			if err != nil {
				l.addf(key+".compression", "%v", err)
			}
			r.Compression = c
		}
		r.DeepVerifyEvery = l.deepVerifyEvery(key+".deep_verify_every", raw.DeepVerifyEvery)
		cfg.Limits.PerRepository[name] = r.MaxConcurrentRuns
		cfg.Repositories[name] = r
	}
}

func (l *loader) jobs(raws []rawJob, cfg *Config, now time.Time) {
	seen := map[string]bool{}
	for i, raw := range raws {
		key := fmt.Sprintf("job.%d", i)
		if raw.Name == "" {
			l.addf(key+".name", "missing: every job needs a name")
		} else if !nameRE.MatchString(raw.Name) {
			l.addf(key+".name", "job name %q: want letters, digits, '.', '-' or '_' (at most 64)", raw.Name)
		} else if seen[raw.Name] {
			l.addf(key+".name", "job %q is declared twice", raw.Name)
		}
		seen[raw.Name] = true
		job := Job{Tags: raw.Tags}
		def := &job.Def
		def.Name = raw.Name
		def.Repository = raw.Repository
		if raw.Repository == "" {
			l.addf(key+".repository", "missing: name one of the [repository.NAME] tables")
		} else if _, ok := cfg.Repositories[raw.Repository]; !ok {
			l.addf(key+".repository", "unknown repository %q (declared: %s)", raw.Repository, declared(cfg.Repositories))
		}
		loc, err := schedule.LoadLocation(raw.TimeZone)
		if err != nil {
			l.addf(key+".time_zone", "%v", err)
			loc = time.UTC
		}
		spec := raw.Schedule
		if spec == "" {
			l.addf(key+".schedule", "missing: such as \"daily 02:00\", \"every 6h\", \"cron 0 3 * * *\" or \"manual\"")
		} else if s, err := schedule.Parse(spec, loc); err != nil {
			l.addf(key+".schedule", "%v", err)
		} else {
			def.Schedule = s
			if raw.RPO != "" {
				if rpo, err := schedule.ParseDuration(raw.RPO); err != nil {
					l.addf(key+".rpo", "%v", err)
				} else if err := schedule.CheckRPO(s, rpo, now); err != nil {
					l.addf(key+".rpo", "%v", err)
				} else {
					job.RPO = rpo
				}
			}
		}
		def.Priority = raw.Priority
		if raw.Priority == "" {
			def.Priority = schedule.DefaultPriority
		} else if !slices.Contains(schedule.PriorityLevels, raw.Priority) {
			l.addf(key+".priority", "%q is not one of %s", raw.Priority, strings.Join(schedule.PriorityLevels, ", "))
		}
		if raw.Bandwidth != "" {
			rate, err := limit.ParseRate(raw.Bandwidth)
			if err != nil {
				l.addf(key+".bandwidth", "%v", err)
			}
			def.Backup.Bandwidth = rate
		}
		if def.CatchUp, err = schedule.ParseCatchUp(raw.CatchUp); err != nil {
			l.addf(key+".catch_up", "%v", err)
		}
		def.Retry = pass.RetryPolicy{}.WithDefaults()
		if raw.Retry != nil {
			if raw.Retry.Attempts != nil {
				def.Retry.Attempts = *raw.Retry.Attempts
				if def.Retry.Attempts < 1 || def.Retry.Attempts > pass.MaxRetryAttempts {
					l.addf(key+".retry", "attempts %d is not allowed: want 1 to %d (1: no retry)", def.Retry.Attempts, pass.MaxRetryAttempts)
				}
			}
			def.Retry.Initial = l.duration(key+".retry", raw.Retry.Initial, def.Retry.Initial)
			def.Retry.Max = l.duration(key+".retry", raw.Retry.Max, def.Retry.Max)
			def.Retry.NoJitter = raw.Retry.Jitter != nil && !*raw.Retry.Jitter
			if def.Retry.Initial > def.Retry.Max {
				l.addf(key+".retry", "initial %s is longer than max %s", def.Retry.Initial, def.Retry.Max)
			}
		}
		if raw.Drill != "" {
			if when, err := schedule.Parse(raw.Drill, loc); err != nil {
				l.addf(key+".drill", "%v", err)
			} else {
				drill := pass.DrillJob(*def, when)
				job.Drill = &drill
			}
		}
		def.DependsOn = raw.DependsOn
		def.Retention = l.retention(key+".retention", raw.Retention)
		def.Verify = l.verify(key+".verify", raw.Verify, cfg.Repositories[raw.Repository])
		job.Notify = l.jobNotify(key+".notify", raw.Notify, cfg)
		for _, tag := range raw.Tags {
			if tag == "" || strings.ContainsAny(tag, ",\n") {
				l.addf(key+".tags", "invalid tag %q: want a non-empty word without commas", tag)
			}
		}
		if len(raw.Source) == 0 {
			l.addf(key, "job %q has no [[job.source]]: say what to back up", raw.Name)
		}
		for j, src := range raw.Source {
			if s, ok := l.source(fmt.Sprintf("%s.source.%d", key, j), src); ok {
				job.Sources = append(job.Sources, s)
				def.Sources = append(def.Sources, s.Path)
			}
		}
		l.duplicateSources(key+".source", job.Sources)
		job.Hooks = l.hooks(key+".hooks", raw.Hooks)
		cfg.Jobs = append(cfg.Jobs, job)
	}
}

// DefaultDeepVerifyEvery is a repository's deep_verify_every when it names
// none (issue 13).
const DefaultDeepVerifyEvery = 7 * 24 * time.Hour

// MaxDeepVerifyEvery bounds deep_verify_every: ten years.
const MaxDeepVerifyEvery = 3660 * 24 * time.Hour

// deepVerifyEvery reads a repository's deep_verify_every: a duration,
// "always" (every verify run is deep: 0) or "never" (-1).
func (l *loader) deepVerifyEvery(key, text string) time.Duration {
	const allowed = `want a duration such as "7d" or "12h" (up to 3660d), "always" (every verify reads every chunk) or "never"`
	switch text {
	case "":
		return DefaultDeepVerifyEvery
	case "always":
		return 0
	case "never":
		return -1
	}
	d, err := schedule.ParseDuration(text)
	if err != nil || d > MaxDeepVerifyEvery {
		l.addf(key, "%q is not allowed: %s", text, allowed)
		return DefaultDeepVerifyEvery
	}
	return d
}

// verify reads a job's verify key: absent or "on" queues a verify run after
// each succeeded backup, "off" does not.
func (l *loader) verify(key, text string, repository Repository) pass.VerifyDef {
	switch text {
	case "", "on":
		return pass.VerifyDef{Enabled: true, DeepEvery: repository.DeepVerifyEvery}
	case "off":
		return pass.VerifyDef{}
	}
	l.addf(key, "%q is not allowed: want \"on\" (verify each backup's snapshots, the default) or \"off\"", text)
	return pass.VerifyDef{}
}

// DefaultRetention is the retention of a job that names none (issue 13).
var DefaultRetention = schedule.RetentionPolicy{Daily: 7, Weekly: 4, Monthly: 6}

// retentionKeys are the rules a job's retention table may set.
var retentionKeys = []string{"last", "hourly", "daily", "weekly", "monthly", "yearly", "within"}

// retention reads a job's retention: absent is DefaultRetention, "off" turns
// it off, a table sets the rules it names (the others are 0: off).
func (l *loader) retention(key string, raw any) pass.RetentionDef {
	switch v := raw.(type) {
	case nil:
		return pass.RetentionDef{Enabled: true, Policy: DefaultRetention}
	case string:
		if v != "off" {
			l.addf(key, "%q is not allowed: want \"off\" or a table such as { daily = 7, weekly = 4, monthly = 6 }", v)
		}
		return pass.RetentionDef{}
	case map[string]any:
		return l.retentionTable(key, v)
	default:
		l.addf(key, "want \"off\" or a table such as { daily = 7, weekly = 4, monthly = 6 }")
		return pass.RetentionDef{}
	}
}

func (l *loader) retentionTable(key string, table map[string]any) pass.RetentionDef {
	var p schedule.RetentionPolicy
	counts := map[string]*int{"last": &p.Last, "hourly": &p.Hourly, "daily": &p.Daily, "weekly": &p.Weekly, "monthly": &p.Monthly, "yearly": &p.Yearly}
	names := make([]string, 0, len(table))
	for name := range table {
		names = append(names, name)
	}
	sort.Strings(names)
	ok := true
	for _, name := range names {
		value := table[name]
		if name == "within" {
			text, isText := value.(string)
			if !isText {
				l.addf(key, "within: want a duration such as \"30d\" or \"1y2m\"")
				ok = false
				continue
			}
			d, err := schedule.ParseCalendarDuration(text)
			if err != nil {
				l.addf(key, "within: %v", err)
				ok = false
				continue
			}
			p.Within = d
			continue
		}
		count, known := counts[name]
		if !known {
			l.addf(key, "unknown key %q (allowed here: %s)", name, strings.Join(retentionKeys, ", "))
			ok = false
			continue
		}
		n, isInt := value.(int64)
		if !isInt {
			l.addf(key, "%s: want a whole number of snapshots (-1: all)", name)
			ok = false
			continue
		}
		*count = int(n)
	}
	if !ok {
		return pass.RetentionDef{}
	}
	if err := p.ValidateForJob(); err != nil {
		l.addf(key, "%v", err)
		return pass.RetentionDef{}
	}
	return pass.RetentionDef{Enabled: true, Policy: p}
}

func declared(repos map[string]Repository) string {
	if len(repos) == 0 {
		return "none"
	}
	return strings.Join(sortedNames(repos), ", ")
}

func sortedNames(repos map[string]Repository) []string {
	names := make([]string, 0, len(repos))
	for n := range repos {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (l *loader) windows(raws []rawWindow, cfg *Config) {
	jobs := cfg.JobDefs() // a window may name scheduled work: "repository:NAME", "JOB:drill"
	for i, raw := range raws {
		key := fmt.Sprintf("window.%d", i)
		name := raw.Name
		if name == "" {
			name = fmt.Sprintf("window %d", i+1)
		}
		kind, err := schedule.ParseWindowKind(raw.Kind)
		if err != nil {
			l.addf(key+".kind", "%v", err)
			continue
		}
		for _, j := range raw.Jobs {
			if _, ok := jobs[j]; !ok {
				l.addf(key+".jobs", "unknown job %q", j)
			}
		}
		recurring := raw.Start != "" || raw.Duration != ""
		oneTime := raw.From != "" || raw.Until != ""
		switch {
		case recurring && oneTime:
			l.addf(key, "a window is either recurring (start and duration) or one-time (from and until), not both")
		case recurring:
			loc, err := schedule.LoadLocation(raw.TimeZone)
			if err != nil {
				l.addf(key+".time_zone", "%v", err)
				continue
			}
			start, err := schedule.Parse(raw.Start, loc)
			if err != nil {
				l.addf(key+".start", "%v", err)
				continue
			}
			if raw.Duration == "" {
				l.addf(key+".duration", "missing: how long the window lasts, such as \"12h\"")
				continue
			}
			length := l.duration(key+".duration", raw.Duration, 0)
			if length == 0 {
				continue
			}
			w, err := schedule.NewRecurringWindow(name, kind, start, length, raw.Jobs)
			if err != nil {
				l.addf(key, "%v", err)
				continue
			}
			cfg.Windows = append(cfg.Windows, w)
		case oneTime:
			from, err1 := time.Parse(time.RFC3339, raw.From)
			until, err2 := time.Parse(time.RFC3339, raw.Until)
			if err1 != nil {
				l.addf(key+".from", "%q is not an RFC3339 time such as 2026-12-24T18:00:00+01:00", raw.From)
				continue
			}
			if err2 != nil {
				l.addf(key+".until", "%q is not an RFC3339 time such as 2026-12-27T08:00:00+01:00", raw.Until)
				continue
			}
			w, err := schedule.NewOneTimeWindow(name, kind, from, until, raw.Jobs)
			if err != nil {
				l.addf(key, "%v", err)
				continue
			}
			cfg.Windows = append(cfg.Windows, w)
		default:
			l.addf(key, "a window needs start and duration (recurring) or from and until (one-time)")
		}
	}
}

// dependencies rejects unknown jobs, self-dependencies and cycles.
func (l *loader) dependencies(cfg *Config) {
	index := map[string]int{}
	for i, j := range cfg.Jobs {
		index[j.Def.Name] = i
	}
	for i, j := range cfg.Jobs {
		for _, dep := range j.Def.DependsOn {
			key := fmt.Sprintf("job.%d.depends_on", i)
			switch _, ok := index[dep]; {
			case dep == j.Def.Name:
				l.addf(key, "job %q depends on itself", dep)
			case !ok:
				l.addf(key, "unknown job %q", dep)
			}
		}
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(cfg.Jobs))
	var stack []string
	reported := map[string]bool{}
	var visit func(i int)
	visit = func(i int) {
		state[i] = visiting
		stack = append(stack, cfg.Jobs[i].Def.Name)
		for _, dep := range cfg.Jobs[i].Def.DependsOn {
			j, ok := index[dep]
			if !ok || dep == cfg.Jobs[i].Def.Name {
				continue
			}
			switch state[j] {
			case visiting:
				start := 0
				for k, name := range stack {
					if name == dep {
						start = k
					}
				}
				cycle := append(append([]string{}, stack[start:]...), dep)
				text := strings.Join(cycle, " → ")
				if !reported[text] {
					reported[text] = true
					l.addf(fmt.Sprintf("job.%d.depends_on", i), "dependency cycle: %s", text)
				}
			case unvisited:
				visit(j)
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
	}
	for i := range cfg.Jobs {
		if state[i] == unvisited {
			visit(i)
		}
	}
}

// reachable rejects jobs whose windows leave them no instant to run.
func (l *loader) reachable(cfg *Config, now time.Time) {
	if len(cfg.Windows) == 0 {
		return
	}
	check := func(key string, def pass.JobDef) {
		next, ok := def.Schedule.Next(now)
		if !ok {
			return
		}
		if _, err := schedule.FirstAllowed(def.Name, next, cfg.Windows); err != nil {
			l.addf(key, "%v", err)
		}
	}
	for i, j := range cfg.Jobs {
		check(fmt.Sprintf("job.%d.schedule", i), j.Def)
		if j.Drill != nil {
			check(fmt.Sprintf("job.%d.drill", i), *j.Drill)
		}
	}
	for _, name := range sortedNames(cfg.Repositories) {
		if r := cfg.Repositories[name]; r.Prune != nil {
			check("repository."+name+".prune", *r.Prune)
		}
	}
}
