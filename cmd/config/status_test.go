package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStatusSettings(t *testing.T) {
	cases := []struct {
		name         string
		scheduler    string
		offlineAfter time.Duration
		probeEvery   time.Duration
		problem      string // a piece of the one problem; "": none
	}{
		{name: "defaults: offline after 3m, probe every 10m", offlineAfter: 3 * time.Minute, probeEvery: 10 * time.Minute},
		{name: "both set", scheduler: "offline_after = \"15m\"\nprobe_every = \"1h\"", offlineAfter: 15 * time.Minute, probeEvery: time.Hour},
		{name: "offline_after not longer than tick_interval", scheduler: "tick_interval = \"1m\"\noffline_after = \"1m\"",
			problem: "scheduler.offline_after: 1m0s is not longer than tick_interval 1m0s"},
		{name: "offline_after not a duration", scheduler: "offline_after = \"soon\"", problem: "scheduler.offline_after"},
		{name: "probe_every too often", scheduler: "probe_every = \"10s\"", problem: "scheduler.probe_every: 10s is too often"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("/etc/nightjar/config.toml", "[scheduler]\n"+tc.scheduler+"\n"+verifyConfig("", ""), testNow)
			if tc.problem != "" {
				var invalid *ErrInvalid
				if !errors.As(err, &invalid) || len(invalid.Problems) != 1 || !strings.Contains(invalid.Problems[0], tc.problem) {
					t.Fatalf("err = %v, want one problem with %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OfflineAfter != tc.offlineAfter || cfg.ProbeEvery != tc.probeEvery {
				t.Errorf("offline_after %s, probe_every %s; want %s, %s", cfg.OfflineAfter, cfg.ProbeEvery, tc.offlineAfter, tc.probeEvery)
			}
		})
	}
}
