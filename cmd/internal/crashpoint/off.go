//go:build !crashtest

package crashpoint

import "github.com/nightjar-backup/nightjar/repo"

// Wrap returns be: without the build tag crashtest there is no hook.
func Wrap(be repo.Backend) repo.Backend { return be }
