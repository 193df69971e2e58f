// Package jobs runs the runs the scheduler hands it: Executor implements
// pass.Executor and dispatches each run on its kind (backup, verify,
// retention and drill now; prune as it comes) to the engine that does the
// work (packages backup and restore), and Classify gives every error the class that decides its retry
// and the exit code. RetentionPlan is the one place where a retention
// policy is applied to a repository's snapshots (for forget, job retention
// and retention runs).
//
// It must never write SQL (the pass records results through its Store) nor
// know the repository's format: it reaches repositories through package
// repo's API and the engines (packages backup and restore) only. The
// catalog of snapshots in the state database is reached through the
// CatalogSync cmd wires.
package jobs
