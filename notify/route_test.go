package notify

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	cases := []struct {
		name string
		url  string
		want string // "" accepted, else a part of the error
	}{
		{name: "https", url: "https://hc-ping.com/0f1e2d3c-aaaa-bbbb-cccc-123456789abc"},
		{name: "http with a port and query", url: "http://127.0.0.1:8080/hook?token=SECRET"},
		{name: "ftp", url: "ftp://files.example.com/SECRET", want: "its scheme is ftp"},
		{name: "no scheme", url: "hooks.example.com/SECRET", want: "its scheme is none"},
		{name: "no host", url: "https:///SECRET", want: "it names no host"},
		{name: "does not parse", url: "https://exa mple.com/SECRET\x7f", want: "it does not parse"},
		{name: "a fragment", url: "https://example.com/x#SECRET", want: "#fragment"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckURL(tc.url)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckURL: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrBadURL) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckURL = %v, want ErrBadURL: %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("the error %q shows the URL", err)
			}
		})
	}
}

func TestPing(t *testing.T) {
	cases := []struct{ name, base, suffix, want string }{
		{name: "success is the URL", base: "https://hc.example/UUID", suffix: "", want: "https://hc.example/UUID"},
		{name: "start", base: "https://hc.example/UUID", suffix: "/start", want: "https://hc.example/UUID/start"},
		{name: "trailing slash and query", base: "https://hc.example/ping/UUID/?create=1", suffix: "/fail", want: "https://hc.example/ping/UUID/fail?create=1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ping(tc.base, tc.suffix); got != tc.want {
				t.Errorf("ping = %q, want %q", got, tc.want)
			}
		})
	}
}
