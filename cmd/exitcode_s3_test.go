package cmd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/restore"
)

// Each S3 refusal exits with the code the README gives it.
func TestS3ExitCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{s3.ErrAccessDenied, ExitWrongPassword},
		{s3.ErrExpiredToken, ExitWrongPassword},
		{s3.ErrNoBucket, ExitNoRepository},
		{s3.ErrBadLocation, ExitUsage},
		{s3.ErrWrongRegion, ExitUsage},
		{s3.ErrBadCAFile, ExitUsage},
		{s3.ErrClockSkew, ExitFailure},
		{s3.ErrNetwork, ExitFailure},
		{s3.ErrServer, ExitFailure},
		{s3.ErrUntrusted, ExitUsage},
		{repo.ErrLockLost, ExitBusy},
	} {
		if got := exitCode(fmt.Errorf("open s3:http://h/b: %w", tc.err)); got != tc.want {
			t.Errorf("exit code of %v = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// A restore whose reads the S3 server failed after the retries exits as
// one that met damage (1 when nothing was restored, 3 when some was), but
// its message names the server's failure and blames no damage; real
// damage still sends the user to check --read-data.
func TestRestoreOutcomeOfAServerFailure(t *testing.T) {
	serverFailed := fmt.Errorf("restore /src/a: load data/0a1b: %w: SlowDown", s3.ErrServer)
	skipped := []repo.Skip{{Path: "/src/a", Reason: serverFailed.Error()}}
	for _, tc := range []struct {
		name         string
		res          restore.Result
		first        error
		code         int
		blamesDamage bool
	}{
		{"nothing restored", restore.Result{Skipped: skipped}, serverFailed, ExitFailure, false},
		{"some restored", restore.Result{Files: 1, Skipped: skipped}, serverFailed, ExitPartial, false},
		{"damage, nothing restored", restore.Result{Skipped: skipped}, repo.ErrIntegrity, ExitFailure, true},
		{"damage, some restored", restore.Result{Files: 1, Skipped: skipped}, repo.ErrIntegrity, ExitPartial, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := restoreOutcome(&tc.res, &restore.DamagedError{Entries: 1, First: tc.first})
			msg := errorMessage(err)
			if exitCode(err) != tc.code || strings.Contains(msg, "damaged") != tc.blamesDamage ||
				!tc.blamesDamage && !strings.Contains(msg, "s3 server failed the request after retries: SlowDown") {
				t.Errorf("exit %d, %q; want exit %d, blaming damage: %v", exitCode(err), msg, tc.code, tc.blamesDamage)
			}
		})
	}
}
