#!/usr/bin/env bash
# Peak memory of a backup of many tiny files, to check the README's figure
# for 1 million files, and a check of a stated bound. See docs/PERFORMANCE.md.
#
#   bench/compare/memory.sh                  # exits 1 when the bound is not met
#   N=20000 LIMIT_MIB=256 bench/compare/memory.sh
#
# It generates N tiny files (default 200,000 of 1 to 1024 random bytes, so
# every file is one distinct chunk) in two halves a/ and b/, then for each
# tool, each time into a fresh repository:
#   half, half-incr:  first and second backup of a/ (N/2 files)
#   full, incr:       first and second backup of a/ and b/ (N files)
# and prints peak RSS (MiB), MiB per 100k files, the growth per 100k files
# between N/2 and N files (which leaves out the fixed part), and the
# extrapolation to 1 million files: RSS(N) + slope x (1M - N).
#
# The check: nightjar's peak RSS of the full first backup of N files (the
# "full" case) must be at most LIMIT_MIB (default 512) MiB. It prints
# "PASS" or "FAIL" with the figures (also into memory.md) and exits 1 on
# FAIL; with nightjar not in TOOLS it prints that nothing was checked.
#
# Growth is not linear in N (see docs/PERFORMANCE.md): for the real figure
# at 1 million files, run N=1000000 with WORK on tmpfs (a few GB of RAM;
# on ext4 the tree would take about 4 GB of disk):
#   mkdir -p /dev/shm/nightjar-bench
#   TOOLS=nightjar N=1000000 WORK=/dev/shm/nightjar-bench RESULTS=/tmp/r bench/compare/memory.sh
#
# Environment: WORK=/tmp/nightjar-bench, N=200000, LIMIT_MIB=512,
# TOOLS="nightjar restic" (borg can be added), NIGHTJAR_BIN=PATH (default:
# built from this checkout), DROP_CACHES=1, KEEP=0, RESULTS=DIR.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-/tmp/nightjar-bench}
N=${N:-200000}
LIMIT_MIB=${LIMIT_MIB:-512}
TOOLS=${TOOLS:-nightjar restic}
DROP_CACHES=${DROP_CACHES:-1}
KEEP=${KEEP:-0}
RES=${RESULTS:-$WORK/results/memory-$(date -u +%Y%m%dT%H%M%SZ)}
export PATH="/usr/local/go/bin:$PATH"

M=$WORK/mem
NIGHTJAR=${NIGHTJAR_BIN:-$WORK/nightjar}
GENDATA=$WORK/gendata

case $LIMIT_MIB in '' | *[!0-9]*) echo "memory.sh: LIMIT_MIB=$LIMIT_MIB is not a number of MiB" >&2; exit 2 ;; esac

log() { printf '%s memory.sh: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "$*"; exit 1; }
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (apt-get install time)"

mkdir -p "$RES"
RES=$(cd "$RES" && pwd)
TSV=$RES/memory.tsv
: >"$TSV"
cleanup() { if [ "$KEEP" != 1 ]; then rm -rf "$M"; fi; }
trap cleanup EXIT

if [ -z "${NIGHTJAR_BIN:-}" ]; then
	log "building nightjar"
	(cd "$ROOT" && CGO_ENABLED=0 go build -o "$NIGHTJAR" .)
fi
log "building gendata"
(cd "$ROOT" && go build -o "$GENDATA" ./bench/compare/gendata)

drop() {
	sync
	if [ "$DROP_CACHES" = 1 ] && [ -w /proc/sys/vm/drop_caches ]; then echo 3 >/proc/sys/vm/drop_caches; fi
}

rm -rf "$M"
mkdir -p "$M"
printf 'nightjar-bench correct horse\n' >"$M/password"
chmod 600 "$M/password"
log "generating $N tiny files"
"$GENDATA" tiny -out "$M/tiny" -n "$N" -max 1024 >&2

export NIGHTJAR_PASSWORD_FILE=$M/password RESTIC_PASSWORD_FILE=$M/password RESTIC_CACHE_DIR=$M/cache-restic
export BORG_PASSCOMMAND="cat $M/password" BORG_BASE_DIR=$M/base-borg
unset RESTIC_PASSWORD RESTIC_PASSWORD_COMMAND NIGHTJAR_PASSWORD NIGHTJAR_PASSWORD_COMMAND BORG_PASSPHRASE BORG_PASSPHRASE_FD

# run TOOL CASE REPO PATH...: one backup under /usr/bin/time -v
run() {
	local tool=$1 case=$2 repo=$3 base t0 t1 rc=0
	shift 3
	base=$RES/$tool.$case
	drop
	t0=$(date +%s.%N)
	case $tool in
	nightjar) /usr/bin/time -v -o "$base.time" "$NIGHTJAR" backup -r "$repo" --json "$@" >"$base.out" 2>"$base.err" || rc=$? ;;
	restic) /usr/bin/time -v -o "$base.time" restic -r "$repo" backup --json "$@" >"$base.out" 2>"$base.err" || rc=$? ;;
	borg) /usr/bin/time -v -o "$base.time" env BORG_REPO="$repo" borg create "::$case" "$@" >"$base.out" 2>"$base.err" || rc=$? ;;
	esac
	t1=$(date +%s.%N)
	[ "$rc" = 0 ] || { tail -n 20 "$base.err" >&2; die "$tool $case failed ($rc)"; }
	local rss wall
	rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): \([0-9]*\).*/\1/p' "$base.time")
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	printf '%s\t%s\t%s\t%s\n' "$tool" "$case" "$rss" "$wall" >>"$TSV"
	log "$tool $case: peak RSS $((rss / 1024)) MiB, ${wall}s"
}

init() { # tool repo
	case $1 in
	nightjar) "$NIGHTJAR" init -r "$2" >/dev/null ;;
	restic) restic -r "$2" init >/dev/null ;;
	borg) BORG_REPO=$2 borg init --encryption=repokey >/dev/null ;;
	esac
}

for t in $TOOLS; do
	if [ "$t" != nightjar ] && ! command -v "$t" >/dev/null; then
		log "$t not found, left out"
		continue
	fi
	rm -rf "$M/repo-$t-half" "$M/repo-$t-full"
	init "$t" "$M/repo-$t-half"
	run "$t" half "$M/repo-$t-half" "$M/tiny/a"
	run "$t" half-incr "$M/repo-$t-half" "$M/tiny/a"
	rm -rf "$M/repo-$t-half"
	init "$t" "$M/repo-$t-full"
	run "$t" full "$M/repo-$t-full" "$M/tiny"
	run "$t" incr "$M/repo-$t-full" "$M/tiny"
	if [ "$t" = nightjar ]; then
		"$NIGHTJAR" check -r "$M/repo-$t-full" --json >"$RES/nightjar.check.json" || true
		printf 'nightjar\tblobs\t%s\t\n' "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["blobs"])' "$RES/nightjar.check.json")" >>"$TSV"
	fi
	rm -rf "$M/repo-$t-full"
done

python3 - "$TSV" "$N" <<'EOF' | tee "$RES/memory.md"
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
n = int(sys.argv[2])
d = {}
for tool, case, rss, wall in rows:
    d.setdefault(tool, {})[case] = (float(rss), float(wall) if wall else None)
print(f"{n:,} files of 1 to 1024 random bytes ({n // 2:,} in the half case); peak RSS from /usr/bin/time -v.")
print()
print("| tool | files | backup | peak RSS (MiB) | MiB per 100k files | time (s) |")
print("|---|---:|---|---:|---:|---:|")
for tool, v in d.items():
    for case, files, what in (("half", n // 2, "first, fresh repository"), ("half-incr", n // 2, "second, nothing changed"),
                              ("full", n, "first, fresh repository"), ("incr", n, "second, nothing changed")):
        if case in v:
            rss = v[case][0] / 1024
            print(f"| {tool} | {files:,} | {what} | {rss:.0f} | {rss / files * 1e5:.1f} | {v[case][1]:.1f} |")
print()
print("| tool | backup | growth per 100k files, N/2 → N (MiB) | straight line to 1M files (MiB; growth is not linear, measure instead) |")
print("|---|---|---:|---:|")
for tool, v in d.items():
    for lo, hi, what in (("half", "full", "first"), ("half-incr", "incr", "second")):
        if lo in v and hi in v:
            slope = (v[hi][0] - v[lo][0]) / 1024 / (n / 2) * 1e5
            at1m = v[hi][0] / 1024 + slope * (1e6 - n) / 1e5
            print(f"| {tool} | {what} | {slope:.1f} | {at1m:.0f} |")
if "blobs" in d.get("nightjar", {}):
    print()
    print(f"nightjar's repository after the full backup holds {int(d['nightjar']['blobs'][0]):,} blobs.")
EOF

# --- the bound --------------------------------------------------------------
rss=$(awk -F'\t' '$1 == "nightjar" && $2 == "full" { print $3 }' "$TSV")
if [ -z "$rss" ]; then
	echo "LIMIT: not checked (nightjar is not in TOOLS=\"$TOOLS\")" | tee -a "$RES/memory.md"
	exit 0
fi
rss_mib=$(((rss + 1023) / 1024))
if [ "$rss_mib" -le "$LIMIT_MIB" ]; then
	verdict=PASS
else
	verdict=FAIL
fi
{
	echo
	echo "$verdict: nightjar's peak RSS for the first backup of $N files is $rss_mib MiB; the bound is $LIMIT_MIB MiB (LIMIT_MIB)."
} | tee -a "$RES/memory.md"
[ "$verdict" = PASS ] || exit 1
