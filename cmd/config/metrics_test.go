package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestMetricsTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nightjar.toml")
	cases := []struct {
		name    string
		table   string
		want    Metrics
		problem []string // substrings of the one problem; nil: loads
	}{
		{name: "absent: nowhere", table: "", want: Metrics{}},
		{name: "absolute textfile and listen", table: "[metrics]\ntextfile = \"/var/lib/node_exporter/nightjar.prom\"\nlisten = \"127.0.0.1:9817\"\n",
			want: Metrics{Textfile: "/var/lib/node_exporter/nightjar.prom", Listen: "127.0.0.1:9817"}},
		{name: "relative textfile is beside the config", table: "[metrics]\ntextfile = \"metrics/nightjar.prom\"\n",
			want: Metrics{Textfile: filepath.Join(dir, "metrics", "nightjar.prom")}},
		{name: "port 0 picks a free port", table: "[metrics]\nlisten = \"127.0.0.1:0\"\n", want: Metrics{Listen: "127.0.0.1:0"}},
		{name: "IPv6 loopback", table: "[metrics]\nlisten = \"[::1]:9817\"\n", want: Metrics{Listen: "[::1]:9817"}},
		{name: "empty textfile", table: "[metrics]\ntextfile = \"\"\n", problem: []string{":2:", "metrics.textfile", "empty path"}},
		{name: "listen without a port", table: "[metrics]\nlisten = \"localhost\"\n", problem: []string{":2:", "metrics.listen", "\"localhost\"", "host:port"}},
		{name: "listen with a port out of range", table: "[metrics]\nlisten = \"127.0.0.1:70000\"\n", problem: []string{"metrics.listen", "70000", "0 to 65535"}},
		{name: "listen with a named port", table: "[metrics]\nlisten = \"127.0.0.1:http\"\n", problem: []string{"metrics.listen", "\"http\""}},
		{name: "unknown key names the allowed ones", table: "[metrics]\ntextfil = \"/x.prom\"\n", problem: []string{"metrics.textfil", "unknown key", "textfile, listen"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse(path, c.table+goodRepo, testNow)
			if c.problem == nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if cfg.Metrics != c.want {
					t.Errorf("metrics %+v, want %+v", cfg.Metrics, c.want)
				}
				return
			}
			var inv *ErrInvalid
			if !errors.As(err, &inv) || len(inv.Problems) != 1 {
				t.Fatalf("Parse = %v, want one problem", err)
			}
			for _, s := range c.problem {
				if !strings.Contains(inv.Problems[0], s) {
					t.Errorf("problem %q does not say %q", inv.Problems[0], s)
				}
			}
		})
	}
}
