// Package metrics turns a snapshot of nightjar's state (jobs and their last
// runs, active runs, the newest pass, repository probes, and the warnings
// of package status) into Prometheus metrics, and writes them in the text
// format for node_exporter's textfile collector (atomically: a scraper
// never reads half a file).
//
// It reads nothing itself: its caller hands it a Snapshot (cmd reads the
// state database and the config). It must never do anything but describe:
// no decision about what is wrong (package status decides the warnings),
// no SQL, no repository access, and no secret in a label or a value (only
// job and repository names from the config, codes and statuses of closed
// sets).
package metrics
