package config

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo/backend"
)

// withS3 makes the s3 scheme known to the config checks while the test
// runs, as it is where the s3 backend is built in.
func withS3(t *testing.T) {
	t.Helper()
	if slices.Contains(backend.Schemes(), "s3") {
		return
	}
	schemes = func() []string { return append(backend.Schemes(), "s3") }
	t.Cleanup(func() { schemes = backend.Schemes })
}

const s3Password = `password_env = "NIGHTJAR_PASSWORD"
`

// A repository on object storage has a url, its s3 settings (as a table or
// as dotted keys) and bandwidth caps, which reach the backend's Options.
func TestRepositoryURLAndOptions(t *testing.T) {
	withS3(t)
	for _, tt := range []struct {
		name, text string
	}{
		{"dotted keys", `
[repository.offsite]
url = "s3:https://s3.example.com/backups/host1"
s3.bucket_lookup = "path"
s3.region = "eu-west-1"
s3.ca_file = "ca.pem"
upload_bandwidth = "8MB/s"
download_bandwidth = "400Mbit"
` + s3Password},
		{"a table", `
[repository.offsite]
url = "s3:https://s3.example.com/backups/host1"
upload_bandwidth = "8MB/s"
download_bandwidth = "400Mbit"
` + s3Password + `
[repository.offsite.s3]
bucket_lookup = "path"
region = "eu-west-1"
ca_file = "ca.pem"
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("/etc/nightjar/config.toml", tt.text, testNow)
			if err != nil {
				t.Fatal(err)
			}
			r := cfg.Repositories["offsite"]
			want := backend.Options{BucketLookup: "path", Region: "eu-west-1", CAFile: "/etc/nightjar/ca.pem", UploadLimit: 8_000_000, DownloadLimit: 50_000_000}
			if r.Options != want {
				t.Errorf("options %+v, want %+v", r.Options, want)
			}
			if r.Path != "" || r.URL != "s3:https://s3.example.com/backups/host1" || r.Location() != r.URL {
				t.Errorf("path %q, url %q, location %q", r.Path, r.URL, r.Location())
			}
		})
	}
	cfg, err := Parse("/c.toml", goodRepo+`upload_bandwidth = "1MiB"`+"\n", testNow)
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Repositories["local"]; r.Location() != "/backup/repo" || r.Options != (backend.Options{UploadLimit: 1 << 20}) {
		t.Errorf("local repository: location %q, options %+v", r.Location(), r.Options)
	}
}

// A url with credentials in it fails validation, and no problem line holds
// any part of them.
func TestRepositoryURLWithCredentialsIsRefusedUnechoed(t *testing.T) {
	withS3(t)
	text := "[repository.r]\n" + s3Password + "url = \"s3:https://AKIAEXAMPLE:wJalrSECRET@h.example/bkt\"\n"
	_, err := Parse("/c.toml", text, testNow)
	var invalid *ErrInvalid
	if !errors.As(err, &invalid) {
		t.Fatalf("parse: %v, want problems", err)
	}
	found := false
	for _, p := range invalid.Problems {
		if strings.Contains(p, "AKIAEXAMPLE") || strings.Contains(p, "wJalrSECRET") {
			t.Errorf("problem %q holds the credentials", p)
		}
		found = found || strings.Contains(p, "repository.r.url: ") && strings.Contains(p, "AWS_ACCESS_KEY_ID")
	}
	if !found {
		t.Errorf("problems %q: none refuses the url and says where credentials come from", invalid.Problems)
	}
	if strings.Contains(err.Error(), "wJalrSECRET") {
		t.Errorf("error %q holds the secret", err)
	}
}

// Every wrong storage setting is one problem line that names its key, its
// line and what is allowed.
func TestRepositoryStorageRejections(t *testing.T) {
	withS3(t)
	repoWith := func(lines string) string {
		return "[repository.r]\n" + s3Password + lines
	}
	for _, tt := range []struct {
		name, text, want string
	}{
		{"neither path nor url", repoWith(""), "repository.r.path: missing: every repository needs a path (a local folder) or a url"},
		{"both", repoWith("path = \"/x\"\nurl = \"s3:https://h/b\"\n"), ":4: repository.r.url: set either path or url, not both"},
		{"url without a scheme", repoWith("url = \"/srv/repo\"\n"), `:3: repository.r.url: "/srv/repo" names no storage: a url starts with a scheme (known: s3); for a local folder set path`},
		{"url of a local folder", repoWith("url = \"local:/srv/repo\"\n"), `:3: repository.r.url: "local:/srv/repo" is a local folder: set path instead of url`},
		{"unknown scheme", repoWith("url = \"sftp:host:/srv\"\n"), `:3: repository.r.url: unknown scheme "sftp" (known: s3)`},
		{"nothing after the scheme", repoWith("url = \"s3:\"\n"), `:3: repository.r.url: "s3:" names no place after the scheme`},
		{"a path with a scheme", repoWith("path = \"s3:https://h/b\"\n"), `path is a local folder (for a folder of that name write ./s3:https://h/b; for other storage set url instead)`},
		{"bad bucket lookup", repoWith("url = \"s3:https://h/b\"\ns3.bucket_lookup = \"virtual\"\n"), `:4: repository.r.s3.bucket_lookup: "virtual" is not one of auto, path, dns`},
		{"s3 settings on a local path", repoWith("path = \"/x\"\n[repository.r.s3]\nregion = \"x\"\n"), `:4: repository.r.s3: s3 settings apply to a url starting with s3: only`},
		{"unknown s3 key", repoWith("url = \"s3:https://h/b\"\ns3.bucket = \"b\"\n"), `:4: repository.r.s3.bucket: unknown key (allowed here: bucket_lookup, region, ca_file)`},
		{"s3 url without a bucket", repoWith("url = \"s3:https://h.example\"\n"), `:3: repository.r.url: bad s3 location s3:https://h.example: no bucket`},
		{"s3 url with a bad port", repoWith("url = \"s3:https://h.example:0/bkt\"\n"), `bad port "0"`},
		{"bad upload rate", repoWith("path = \"/x\"\nupload_bandwidth = \"fast\"\n"), ":4: repository.r.upload_bandwidth: invalid bandwidth"},
		{"rate without a unit", repoWith("path = \"/x\"\ndownload_bandwidth = \"4096\"\n"), ":4: repository.r.download_bandwidth: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("/c.toml", tt.text, testNow)
			var invalid *ErrInvalid
			if !errors.As(err, &invalid) {
				t.Fatalf("parse: %v, want problems", err)
			}
			var found bool
			for _, p := range invalid.Problems {
				if strings.Contains(p, "\n") {
					t.Errorf("problem of more than one line: %q", p)
				}
				found = found || strings.Contains(p, tt.want)
			}
			if !found {
				t.Errorf("problems %q, want one containing %q", invalid.Problems, tt.want)
			}
		})
	}
}
