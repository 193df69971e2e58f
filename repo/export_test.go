package repo

// SetPackSize makes the packs that r writes from now on fill at n bytes
// instead of the configured size, so that tests fill several packs with a
// few MiB (the configuration stored in the repository is not changed).
func (r *Repository) SetPackSize(n int) { r.cfg.PackSize = n }
