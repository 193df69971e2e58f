// Package schedule is nightjar's pure arithmetic of time. It parses
// schedule specs ("daily 02:00", "every 6h", "cron */15 9-17 * * mon-fri"),
// computes their slots in an IANA time zone with fixed rules for daylight
// saving changes, describes them for humans, counts missed slots, checks a
// recovery point objective, postpones slots out of maintenance windows and
// decides which snapshots a retention policy keeps (docs/RETENTION.md);
// the scheduler's other calculations of time live here too.
//
// Everything here is a function of its inputs and of the time it is given.
// The package must never read the clock (callers pass now or from), never
// use the machine's local time zone, never do I/O beyond the standard
// library's loading of a zone, and never import another nightjar package:
// the pass, the config loader and the command line build on it, not the
// other way round.
//
// The rules of schedules are documented for users in docs/SCHEDULES.md;
// keep the two in step.
package schedule
