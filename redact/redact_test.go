package redact

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	secrets := New("/etc/nightjar/offsite.pass", "pass show backup/offsite", "short")
	tests := []struct{ name, in, want string }{
		{"text without URLs stays", "open /srv/backup: no such file or directory", "open /srv/backup: no such file or directory"},
		{"a URL's path goes", "get https://s3.example.com/b/config: 404", "get https://s3.example.com/…: 404"},
		{"hc-ping UUID path goes", "ping https://hc-ping.com/5f1c0f8e-2b7a-4c1e-9d55-0c2d6a1b7e44/fail: 503",
			"ping https://hc-ping.com/…: 503"},
		{"slack hooks path goes", `Post "https://hooks.slack.com/services/T000/B000/XXXXSECRET": dial tcp: refused`,
			`Post "https://hooks.slack.com/…": dial tcp: refused`},
		{"userinfo goes, the port stays", "s3://key:secret@minio.lan:9000/bucket", "s3://minio.lan:9000/…"},
		{"query goes", "https://hc.example?key=secret", "https://hc.example/…"},
		{"a bare host stays", "https://hc.example and https://hc.example/", "https://hc.example and https://hc.example"},
		{"trailing punctuation stays", "see (https://hc.example/abc).", "see (https://hc.example/…)."},
		{"a secret string goes", "repository offsite: open /etc/nightjar/offsite.pass: permission denied",
			"repository offsite: open [redacted]: permission denied"},
		{"a longer secret goes whole", "ran pass show backup/offsite", "ran [redacted]"},
		{"a secret shorter than MinSecret is not looked for", "a short word", "a short word"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := secrets.Text(tt.in); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestZeroRedactorRemovesURLsOnly(t *testing.T) {
	in := "open /etc/nightjar/offsite.pass via https://u:p@h.example/x"
	if got, want := Text(in), "open /etc/nightjar/offsite.pass via https://h.example/…"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
}

func TestURL(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"path and query", "https://hc-ping.com/UUID?rid=1", "https://hc-ping.com/…"},
		{"userinfo and port", "http://user:pw@127.0.0.1:9000/hook", "http://127.0.0.1:9000/…"},
		{"an @ in the path is not userinfo", "https://h.example/a@b", "https://h.example/…"},
		{"fragment", "https://h.example#token", "https://h.example/…"},
		{"no scheme", "%zz", unparsable},
		{"no host", "https:///path", unparsable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := URL(tt.in)
			if got != tt.want {
				t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
			}
			for _, secret := range []string{"UUID", "pw", "hook", "token", "path"} {
				if strings.Contains(got, secret) {
					t.Errorf("URL(%q) = %q shows %q", tt.in, got, secret)
				}
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	tests := []struct {
		name, in string
		limit    int
		want     string
	}{
		{"lines fold", "exit status 1:\n  pg_dump: error\r\n", 0, "exit status 1: pg_dump: error"},
		{"short stays", "ok", 10, "ok"},
		{"cut marked", "abcdefghij", 4, "abcd..."},
		{"cut at a rune boundary", "ab€cd", 4, "ab..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OneLine(tt.in, tt.limit); got != tt.want {
				t.Errorf("OneLine(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
			}
		})
	}
}
