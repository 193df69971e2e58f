package s3_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// A region other than the server's is ErrWrongRegion naming the right one,
// whether it comes from the settings or from AWS_REGION.
func TestWrongRegion(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.MakeBucket(t, "region")
	cfg := config(t, srv, "region", "repo")
	cfg.Region = "eu-west-1"
	_, err := s3.Open(context.Background(), cfg)
	if !errors.Is(err, s3.ErrWrongRegion) || !strings.Contains(err.Error(), "it is in "+s3test.Region) {
		t.Errorf("open in region eu-west-1 of a server in %s: %v, want ErrWrongRegion naming %s", s3test.Region, err, s3test.Region)
	} else {
		oneLine(t, err)
	}
	t.Setenv("AWS_REGION", "ap-south-1")
	_, err = s3.Open(context.Background(), config(t, srv, "region", "repo"))
	if !errors.Is(err, s3.ErrWrongRegion) {
		t.Errorf("open with AWS_REGION=ap-south-1: %v, want ErrWrongRegion", err)
	}
}

// The region of the profile in the shared config file is used when the
// environment names none.
func TestRegionFromProfile(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.MakeBucket(t, "profile")
	file := t.TempDir() + "/config"
	if err := writeFile(file, "[default]\nregion = "+s3test.Region+"\n[profile far]\nregion = sa-east-1\n"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", file)
	t.Setenv("AWS_PROFILE", "far")
	if _, err := s3.Open(context.Background(), config(t, srv, "profile", "repo")); !errors.Is(err, s3.ErrWrongRegion) {
		t.Errorf("open with profile far (sa-east-1): %v, want ErrWrongRegion", err)
	}
	t.Setenv("AWS_PROFILE", "default")
	if _, err := s3.Create(context.Background(), config(t, srv, "profile", "repo")); err != nil {
		t.Errorf("create with the default profile (%s): %v", s3test.Region, err)
	}
}

// Credentials come from the shared credentials file's profile when the
// environment has none.
func TestCredentialsFromProfile(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	file := t.TempDir() + "/credentials"
	content := "[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong-secret-0000000\n" +
		"[backup]\naws_access_key_id = " + s3test.AccessKey + "\naws_secret_access_key = " + s3test.SecretKey + "\n"
	if err := writeFile(file, content); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	t.Setenv("AWS_PROFILE", "default")
	if _, err := s3.Create(context.Background(), config(t, srv, "creds-file", "repo")); !errors.Is(err, s3.ErrAccessDenied) {
		t.Errorf("create with the default profile's wrong key: %v, want ErrAccessDenied", err)
	}
	t.Setenv("AWS_PROFILE", "backup")
	if _, err := s3.Create(context.Background(), config(t, srv, "creds-file", "repo")); err != nil {
		t.Errorf("create with the backup profile's key: %v", err)
	}
}
