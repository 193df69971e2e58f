// Package jobs runs the runs the scheduler hands it: Executor implements
// pass.Executor and dispatches each run on its kind (backup, verify,
// retention and drill now; prune as it comes) to the engine that does the
// work (packages backup and restore), and Classify gives every error the class that decides its retry
// and the exit code. RetentionPlan is the one place where a retention
// policy is applied to a repository's snapshots (for forget, job retention
// and retention runs). A backup run runs its job's hooks around its work
// and backs up command sources (a command's standard output streamed into
// a snapshot), each in a process group of its own that a timeout or the
// run's cancellation stops.
//
// It must never write SQL (the pass records results through its Store) nor
// know the repository's format: it reaches repositories through package
// repo's API and the engines (packages backup and restore) only. The
// catalog of snapshots in the state database is reached through the
// CatalogSync cmd wires. It must never hand a password to a hook or a
// command source: their environment is the scheduler's without any
// password variable (ScrubEnviron), and their output is kept with the run.
package jobs
