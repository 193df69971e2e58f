package s3

import (
	"github.com/nightjar-backup/nightjar/repo/backend/cache"
	"github.com/nightjar-backup/nightjar/repo/backend/lease"
)

// The lease's release and the cache's snapshot records find these with
// repo.Capability and quietly do without when a signature drifts (a HEAD
// before each lock's DELETE, no cached records): the build says so first.
var (
	_ lease.Deleter    = (*Backend)(nil)
	_ cache.ETagLister = (*Backend)(nil)
)
