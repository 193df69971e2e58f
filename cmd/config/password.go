package config

import (
	"fmt"
	"os"
	"time"

	"github.com/nightjar-backup/nightjar/cmd/internal/secret"
	"github.com/nightjar-backup/nightjar/schedule"
)

// MaxPasswordCommandTimeout is the longest password_command_timeout.
const MaxPasswordCommandTimeout = time.Hour

// passwordTimeout reads a repository's password_command_timeout: a
// duration above 0, at most MaxPasswordCommandTimeout, set only beside a
// password_command.
func (l *loader) passwordTimeout(key string, raw rawRepository) time.Duration {
	if raw.PasswordTimeout == "" {
		return secret.DefaultCommandTimeout
	}
	key += ".password_command_timeout"
	if raw.PasswordCommand == "" {
		l.addf(key, "is set but the repository has no password_command: remove it, or set password_command")
		return secret.DefaultCommandTimeout
	}
	d, err := schedule.ParseDuration(raw.PasswordTimeout)
	if err != nil || d <= 0 || d > MaxPasswordCommandTimeout {
		l.addf(key, "%q is not allowed: want a duration such as \"30s\" or \"2m\" (above 0, at most 1h; default %s)",
			raw.PasswordTimeout, secret.DefaultCommandTimeout)
		return secret.DefaultCommandTimeout
	}
	return d
}

// namesCommands reports whether cfg makes nightjar run a command of its
// text: a password_command, a hook or a command source.
func namesCommands(cfg *Config) bool {
	for _, r := range cfg.Repositories {
		if r.Password.Command != "" {
			return true
		}
	}
	for _, j := range cfg.Jobs {
		h := j.Hooks
		if h.Before != nil || h.After != nil || h.OnSuccess != nil || h.OnFailure != nil || h.OnPartial != nil {
			return true
		}
		for _, s := range j.Sources {
			if s.Command != nil {
				return true
			}
		}
	}
	return false
}

// checkMode refuses a config that names a command when others can write
// it: they could make nightjar run their command, often as root.
func checkMode(path string, cfg *Config) error {
	if !namesCommands(cfg) {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	if err := secret.CheckConfigMode(fi); err != nil {
		return &ErrInvalid{Path: path, Problems: []string{fmt.Sprintf(
			"%s: names a password_command, hooks or command sources and %v: refused, as anyone could make nightjar run their command; fix: chmod o-w %s",
			path, err, path)}}
	}
	return nil
}
