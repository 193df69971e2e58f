package cmd

import (
	"fmt"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
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
