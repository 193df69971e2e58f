package s3_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/redact"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
)

func TestParseLocation(t *testing.T) {
	tests := []struct {
		in   string
		want s3.Location
	}{
		{"https://s3.example.com/bucket", s3.Location{Endpoint: "s3.example.com", Secure: true, Bucket: "bucket"}},
		{"https://s3.example.com:9000/bucket/some/prefix", s3.Location{Endpoint: "s3.example.com:9000", Secure: true, Bucket: "bucket", Prefix: "some/prefix"}},
		{"http://127.0.0.1:7070/b-1.x/p/", s3.Location{Endpoint: "127.0.0.1:7070", Bucket: "b-1.x", Prefix: "p"}},
		{"s3.amazonaws.com/bucket/prefix", s3.Location{Endpoint: "s3.amazonaws.com", Secure: true, Bucket: "bucket", Prefix: "prefix"}},
		{"[::1]:9000/bucket", s3.Location{Endpoint: "[::1]:9000", Secure: true, Bucket: "bucket"}},
		{"host/bucket//", s3.Location{Endpoint: "host", Secure: true, Bucket: "bucket"}},
	}
	for _, tt := range tests {
		got, err := s3.ParseLocation(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseLocation(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseLocationString(t *testing.T) {
	for in, want := range map[string]string{
		"host/bucket":                      "s3:https://host/bucket",
		"http://h:1/bucket/a/b/":           "s3:http://h:1/bucket/a/b",
		"https://h/bucket":                 "s3:https://h/bucket",
		"s3.eu-west-1.amazonaws.com/b1c/x": "s3:https://s3.eu-west-1.amazonaws.com/b1c/x",
	} {
		loc, err := s3.ParseLocation(in)
		if err != nil || loc.String() != want {
			t.Errorf("ParseLocation(%q).String() = %q, %v; want %q", in, loc.String(), err, want)
		}
	}
}

// A location that holds credentials is refused in one line that says where
// credentials come from and holds no part of them, in every form.
func TestParseLocationNeverEchoesCredentials(t *testing.T) {
	const key, secret = "AKIAEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzq9"
	for _, in := range []string{
		"https://" + key + ":" + secret + "@host.example/bucket",
		"http://" + key + ":" + secret + "@host.example:9000/bucket/p",
		key + ":" + secret + "@host.example/bucket",
		"https://" + key + "@host.example/bucket",
	} {
		_, err := s3.ParseLocation(in)
		if !errors.Is(err, s3.ErrBadLocation) {
			t.Errorf("ParseLocation with credentials: %v, want ErrBadLocation", err)
			continue
		}
		msg := err.Error()
		for _, part := range []string{key, secret, "wJalr", "bPxRfiCYzq9", "K7MDENG"} {
			if strings.Contains(msg, part) {
				t.Errorf("message %q holds %q", msg, part)
			}
		}
		if !strings.Contains(msg, "AWS_ACCESS_KEY_ID") || strings.Contains(msg, "\n") {
			t.Errorf("message %q: want one line naming where credentials come from", msg)
		}
	}
}

// A bad location is one line naming what is wrong and the allowed forms.
func TestParseLocationErrors(t *testing.T) {
	tests := []struct{ in, says string }{
		{"https://host", "no bucket"},
		{"https://host/", "no bucket"},
		{"host", "no bucket"},
		{"https:///bucket", "no host"},
		{"/bucket", "no host"},
		{"https://host:0/bucket", `bad port "0"`},
		{"https://host:65536/bucket", `bad port "65536"`},
		{"https://host:http/bucket", `bad port "http"`},
		{"https://host:/bucket", `bad port ""`},
		{"https://host/Bucket", `bad bucket name "Bucket"`},
		{"https://host/ab", `bad bucket name "ab": 3 to 63 characters`},
		{"https://host/" + strings.Repeat("a", 64), "3 to 63 characters"},
		{"https://host/-bucket", "must start and end with a letter or digit"},
		{"https://host/bu_cket", "lowercase letters, digits"},
		{"https://host/a..b", "no two '.' in a row"},
		{"https://host/192.168.1.1", "IP address"},
		{"https://host/bucket/a/../b", "bad prefix"},
		{"https://host/bucket/a//b", "bad prefix"},
		{"ftp://host/bucket", `unknown URL scheme "ftp"`},
		{"https://host?x=1/bucket", "query or fragment"},
	}
	for _, tt := range tests {
		_, err := s3.ParseLocation(tt.in)
		if !errors.Is(err, s3.ErrBadLocation) {
			t.Errorf("ParseLocation(%q): %v, want ErrBadLocation", tt.in, err)
			continue
		}
		msg := err.Error()
		for _, want := range []string{tt.says, "s3:" + tt.in, "s3:host[:port]/bucket[/prefix], with https:// or http://"} {
			if !strings.Contains(msg, want) {
				t.Errorf("ParseLocation(%q): %q does not say %q", tt.in, msg, want)
			}
		}
		if redacted := redact.Text(msg); !strings.Contains(redacted, tt.says) || !strings.Contains(redacted, "s3:host[:port]/bucket[/prefix], with https:// or http://") {
			t.Errorf("ParseLocation(%q): %q loses what is wrong or the forms once its URLs are cut: %q", tt.in, msg, redacted)
		}
		if strings.ContainsAny(msg, "\n") {
			t.Errorf("ParseLocation(%q): %q is more than one line", tt.in, msg)
		}
	}
}
