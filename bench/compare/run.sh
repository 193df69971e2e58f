#!/usr/bin/env bash
# Side-by-side benchmark: nightjar against restic (and borg when installed) on
# the same generated data set, each tool with its default settings, each on a
# fresh repository. See docs/PERFORMANCE.md for what it measures and results.
#
#   bench/compare/run.sh            # one round (~3 minutes), prints a Markdown table
#   ROUNDS=3 bench/compare/run.sh   # three rounds, then a table of the medians
#
# Environment:
#   WORK=/tmp/nightjar-bench   scratch folder (data set, repositories, restores)
#   TOOLS="nightjar restic borg"  tools to run; missing ones are left out
#   RESTIC=restic BORG=borg    binaries to use
#   NIGHTJAR_BIN=PATH          nightjar binary to measure (default: built from
#                              this checkout); NIGHTJAR_VERSION=TEXT names it
#   ROUNDS=1                   rounds; with more than one, the table shows medians
#   BORG_ENCRYPTION=repokey    borg has no default mode; repokey (AES-CTR +
#                              HMAC-SHA256) is the faster one on CPUs with SHA-NI
#   SEED=1                     data set seed
#   DROP_CACHES=1              drop the page cache before each measured step
#                              (needs root; otherwise the cache stays warm)
#   KEEP=0                     1 keeps data set and repositories afterwards
#   RESULTS=DIR                where results.tsv and the logs go
#                              (default $WORK/results/<UTC time>)
#
# Steps, in this order, each tool in turn within a step:
#   init; first backup; unchanged re-backup with a cold cache, then again
#   with a warm one; the change (gendata mutate: 1% of the bytes overwritten
#   in place, 100 bytes inserted at the start of the 3 big files); backup of
#   the changed tree; full restore (then compared with the source by diff -r,
#   not timed); check reading all data.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-/tmp/nightjar-bench}
SEED=${SEED:-1}
TOOLS=${TOOLS:-nightjar restic borg}
RESTIC=${RESTIC:-restic}
BORG=${BORG:-borg}
BORG_ENCRYPTION=${BORG_ENCRYPTION:-repokey}
DROP_CACHES=${DROP_CACHES:-1}
KEEP=${KEEP:-0}
RES=${RESULTS:-$WORK/results/$(date -u +%Y%m%dT%H%M%SZ)}
ROUNDS=${ROUNDS:-1}
export PATH="/usr/local/go/bin:$PATH"

B=$WORK/cmp
DATA=$B/data
GENDATA=$WORK/gendata

log() { printf '%s run.sh: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "$*"; exit 1; }

mkdir -p "$WORK"
# nightjar under test: NIGHTJAR_BIN if given, else built from this checkout.
if [ -n "${NIGHTJAR_BIN:-}" ]; then
	NIGHTJAR=$NIGHTJAR_BIN
	[ -x "$NIGHTJAR" ] || die "NIGHTJAR_BIN=$NIGHTJAR is not executable"
	NIGHTJAR_VERSION=${NIGHTJAR_VERSION:-"$("$NIGHTJAR" --version 2>/dev/null | head -1 || echo prebuilt)"}
else
	NIGHTJAR=$WORK/nightjar
	log "building nightjar"
	(cd "$ROOT" && go build -o "$NIGHTJAR" .)
	NIGHTJAR_VERSION=$(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo unknown)
fi
log "building gendata"
(cd "$ROOT" && go build -o "$GENDATA" ./bench/compare/gendata)

# Several rounds: run this script once per round with the same binary, then
# report the medians.
if [ "$ROUNDS" -gt 1 ]; then
	tsvs=()
	for r in $(seq 1 "$ROUNDS"); do
		RESULTS=$RES/round$r ROUNDS=1 NIGHTJAR_BIN=$NIGHTJAR NIGHTJAR_VERSION=$NIGHTJAR_VERSION "$0"
		tsvs+=("$RES/round$r/results.tsv")
	done
	python3 "$HERE/report.py" "${tsvs[@]}" | tee "$RES/table.md"
	exit 0
fi

[ -x /usr/bin/time ] || die "/usr/bin/time is needed (apt-get install time)"
command -v python3 >/dev/null || die "python3 is needed for the report"

mkdir -p "$WORK" "$RES"
RES=$(cd "$RES" && pwd)
TSV=$RES/results.tsv
: >"$TSV"

cleanup() {
	if [ "$KEEP" != 1 ]; then
		rm -rf "$B"
	fi
}
trap cleanup EXIT

# --- which tools -----------------------------------------------------------
tools=()
for t in $TOOLS; do
	case $t in
	nightjar) tools+=(nightjar) ;;
	restic) if command -v "$RESTIC" >/dev/null; then tools+=(restic); else log "restic not found, left out"; fi ;;
	borg) if command -v "$BORG" >/dev/null; then tools+=(borg); else log "borg not found, left out"; fi ;;
	*) die "unknown tool $t" ;;
	esac
done

record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$TSV"; }

can_drop=0
if [ "$DROP_CACHES" = 1 ] && [ -w /proc/sys/vm/drop_caches ]; then
	can_drop=1
elif [ "$DROP_CACHES" = 1 ]; then
	log "cannot write /proc/sys/vm/drop_caches: the page cache stays warm"
fi
drop() {
	sync
	if [ "$can_drop" = 1 ]; then echo 3 >/proc/sys/vm/drop_caches; fi
}

# timed TOOL STEP [nodrop] -- COMMAND...: runs COMMAND under /usr/bin/time -v,
# records wall seconds, CPU percent and peak RSS (KiB).
timed() {
	local tool=$1 step=$2 dropit=1
	shift 2
	if [ "$1" = nodrop ]; then dropit=0; shift; fi
	[ "$1" = -- ] && shift
	[ "$dropit" = 1 ] && drop
	local base=$RES/$tool.$step t0 t1 rc=0
	t0=$(date +%s.%N)
	/usr/bin/time -v -o "$base.time" "$@" >"$base.out" 2>"$base.err" || rc=$?
	t1=$(date +%s.%N)
	if [ "$rc" != 0 ]; then
		tail -n 20 "$base.err" >&2 || true
		die "$tool $step failed with exit code $rc (logs in $base.*)"
	fi
	local wall cpu rss
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	cpu=$(sed -n 's/^\s*Percent of CPU this job got: \([0-9]*\)%.*/\1/p' "$base.time")
	rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): \([0-9]*\).*/\1/p' "$base.time")
	record "$tool" "$step.wall" "$wall"
	record "$tool" "$step.cpu" "$cpu"
	record "$tool" "$step.rss_kib" "$rss"
	log "$tool $step: ${wall}s, CPU ${cpu}%, peak RSS $((rss / 1024)) MiB"
}

repo_of() { echo "$B/repo-$1"; }
repo_bytes() { du -sb "$(repo_of "$1")" | cut -f1; }

# Same password for everyone, from one file. borg has no --password-file;
# BORG_PASSCOMMAND="cat FILE" is its equivalent.
export NIGHTJAR_REPOSITORY=$B/repo-nightjar NIGHTJAR_PASSWORD_FILE=$B/password
export RESTIC_REPOSITORY=$B/repo-restic RESTIC_PASSWORD_FILE=$B/password RESTIC_CACHE_DIR=$B/cache-restic
export BORG_REPO=$B/repo-borg BORG_PASSCOMMAND="cat $B/password" BORG_BASE_DIR=$B/base-borg
unset RESTIC_PASSWORD RESTIC_PASSWORD_COMMAND NIGHTJAR_PASSWORD NIGHTJAR_PASSWORD_COMMAND BORG_PASSPHRASE BORG_PASSPHRASE_FD

cmd_init() {
	case $1 in
	nightjar) echo "$NIGHTJAR" init ;;
	restic) echo "$RESTIC" init ;;
	borg) echo "$BORG" init --encryption="$BORG_ENCRYPTION" ;;
	esac
}
cmd_backup() { # tool name
	case $1 in
	nightjar) echo "$NIGHTJAR" backup --json "$DATA" ;;
	restic) echo "$RESTIC" backup --json "$DATA" ;;
	borg) echo "$BORG" create --json "::$2" "$DATA" ;;
	esac
}
# bytes added by a backup according to the tool itself
added_bytes() { # tool outfile
	case $1 in
	nightjar) python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes_added"])' "$2" ;;
	# restic 0.14's data_added counts blob bytes before compression
	restic) python3 -c 'import json,sys
for l in open(sys.argv[1]):
    if "\"summary\"" in l: print(json.loads(l)["data_added"])' "$2" ;;
	borg) python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["archive"]["stats"]["deduplicated_size"])' "$2" ;;
	esac
}

# --- machine and versions --------------------------------------------------
record meta date "$(date -u +%Y-%m-%dT%H:%MZ)"
record meta cpu "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1) x $(nproc)"
record meta memory "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
record meta kernel "$(uname -r)"
record meta loadavg "$(cut -d' ' -f1-3 /proc/loadavg)"
record meta fs "$(df -T "$WORK" | awk 'NR == 2 { print $2 }')"
record meta cache "$([ "$can_drop" = 1 ] && echo 'dropped before each step' || echo warm)"
record meta go "$(go version | awk '{ print $3 }')"
record meta nightjar "$NIGHTJAR_VERSION"
for t in "${tools[@]}"; do
	case $t in
	restic) record meta restic "$("$RESTIC" version | awk '{ print $2 }')" ;;
	borg) record meta borg "$("$BORG" --version | awk '{ print $2 }') ($BORG_ENCRYPTION)" ;;
	esac
done

# --- data set --------------------------------------------------------------
rm -rf "$B"
mkdir -p "$B"
printf 'nightjar-bench correct horse\n' >"$B/password"
chmod 600 "$B/password"
log "generating the data set (seed $SEED)"
"$GENDATA" gen -out "$B" -seed "$SEED" >&2
record meta data_bytes "$(find "$DATA" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')"
record meta data_files "$(find "$DATA" -type f | wc -l)"

# --- init ------------------------------------------------------------------
for t in "${tools[@]}"; do
	# shellcheck disable=SC2046
	timed "$t" init nodrop -- $(cmd_init "$t")
done

# --- first backup ----------------------------------------------------------
for t in "${tools[@]}"; do
	# shellcheck disable=SC2046
	timed "$t" b1 -- $(cmd_backup "$t" b1)
	record "$t" b1.added "$(added_bytes "$t" "$RES/$t.b1.out")"
	record "$t" size1 "$(repo_bytes "$t")"
done

# --- unchanged re-backup, cold then warm -----------------------------------
for t in "${tools[@]}"; do
	# shellcheck disable=SC2046
	timed "$t" b2 -- $(cmd_backup "$t" b2)
	# shellcheck disable=SC2046
	timed "$t" b2w nodrop -- $(cmd_backup "$t" b2w)
	record "$t" size2 "$(repo_bytes "$t")"
done

# --- the change ------------------------------------------------------------
log "changing the data set"
"$GENDATA" mutate -dir "$B" -seed "$SEED" >&2

for t in "${tools[@]}"; do
	# shellcheck disable=SC2046
	timed "$t" b3 -- $(cmd_backup "$t" b3)
	record "$t" b3.added "$(added_bytes "$t" "$RES/$t.b3.out")"
	record "$t" size3 "$(repo_bytes "$t")"
done

# --- full restore ----------------------------------------------------------
for t in "${tools[@]}"; do
	target=$B/restore-$t
	rm -rf "$target"
	mkdir -p "$target"
	case $t in
	nightjar) timed "$t" restore -- "$NIGHTJAR" restore latest --target "$target" ;;
	restic) timed "$t" restore -- "$RESTIC" restore latest --target "$target" ;;
	borg) timed "$t" restore -- env -C "$target" "$BORG" extract ::b3 ;;
	esac
	if diff -r -q --no-dereference "$DATA" "$target$DATA" >"$RES/$t.verify" 2>&1; then
		record "$t" restore.identical yes
	else
		record "$t" restore.identical NO
		log "$t: restored tree differs from the source (see $RES/$t.verify)"
	fi
	rm -rf "$target"
done

# --- check reading all data ------------------------------------------------
for t in "${tools[@]}"; do
	case $t in
	nightjar) timed "$t" check -- "$NIGHTJAR" check --read-data ;;
	restic) timed "$t" check -- "$RESTIC" check --read-data ;;
	borg) timed "$t" check -- "$BORG" check --verify-data ;;
	esac
done

log "results in $TSV"
python3 "$HERE/report.py" "$TSV" | tee "$RES/table.md"
