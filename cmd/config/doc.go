// Package config reads and validates nightjar's TOML config: repositories,
// jobs, maintenance windows and scheduler settings.
//
// Loading is strict: an unknown key is an error (a typo must not silently
// disable a setting), and every error names the key, its line and what is
// allowed. Load validates everything the schedule package validates (zones,
// specs, RPO, windows), dependencies (unknown jobs, cycles spelled out),
// repositories and sources. It only reads the file: it must never touch the
// state database or a repository.
package config
