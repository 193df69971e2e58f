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

// A restore that the S3 server's failure after the retries stopped exits
// 1, as the README gives a server's failure, whatever it restored before,
// with one line that names the server's answer and blames no damage; a
// restore that met damage exits 1 when nothing was restored and 3 when
// some was, and sends the user to check --read-data.
func TestRestoreOutcomeOfAServerFailure(t *testing.T) {
	serverFailed := fmt.Errorf("restore stopped at /src/a: load data/0a1b: %w: SlowDown", s3.ErrServer)
	damaged := &restore.DamagedError{Entries: 1, First: fmt.Errorf("restore /src/a: %w", repo.ErrIntegrity)}
	skipped := []repo.Skip{{Path: "/src/a", Reason: damaged.First.Error()}}
	for _, tc := range []struct {
		name         string
		res          restore.Result
		err          error
		code         int
		blamesDamage bool
	}{
		{"stopped, nothing restored", restore.Result{}, serverFailed, ExitFailure, false},
		{"stopped, some restored", restore.Result{Files: 1}, serverFailed, ExitFailure, false},
		{"stopped after damage", restore.Result{Files: 1, Damaged: 1, Skipped: skipped}, serverFailed, ExitFailure, false},
		{"damage, nothing restored", restore.Result{Damaged: 1, Skipped: skipped}, damaged, ExitFailure, true},
		{"damage, some restored", restore.Result{Files: 1, Damaged: 1, Skipped: skipped}, damaged, ExitPartial, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := restoreOutcome(&tc.res, tc.err)
			msg := errorMessage(err)
			if exitCode(err) != tc.code || strings.Contains(msg, "damaged") != tc.blamesDamage ||
				!tc.blamesDamage && !strings.Contains(msg, "s3 server failed the request after retries: SlowDown") {
				t.Errorf("exit %d, %q; want exit %d, blaming damage: %v", exitCode(err), msg, tc.code, tc.blamesDamage)
			}
		})
	}
}
