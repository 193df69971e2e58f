#!/usr/bin/env bash
# S3 case of the side-by-side benchmark (issue 15): nightjar against restic,
# each with its s3 backend, into one versitygw on loopback, through a
# counting proxy (bench/s3proxy, no faults) that tells how many requests
# and bytes each step of each tool sent. See docs/PERFORMANCE.md.
#
#   bench/compare/s3.sh                                # the mixed set
#   SOURCE_TREE=$(go env GOROOT)/src LARGE_MIB=64 bench/compare/s3.sh   # a smaller one
#
# Environment (as run.sh where the names are the same):
#   WORK=/tmp/nightjar-bench-s3   scratch folder
#   DATASET=mixed                 source, large or mixed (see run.sh)
#   LARGE_MIB=512                 size of each large file
#   SOURCE_TREE=$(go env GOROOT)  the tree copied for source and mixed
#   TOOLS="nightjar restic restic-new"   tools by id; missing ones are left out with a log line
#   RESTIC=restic, RESTIC_NEW=PATH       restic binaries (restic-new: left out when unset)
#   NIGHTJAR_BIN=PATH             nightjar to measure (default: built from this checkout)
#   VERSITYGW=versitygw           the S3 server (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)
#   SEED=1, KEEP=0, RESULTS=DIR   as run.sh
#   DROP_CACHES=1                 as root, before each tool's restore: sync, drop
#                                 the page cache, dentries and inodes, then read the
#                                 buckets back (0: leave the caches as they are)
#
# Steps, each tool in turn within a step, each in a bucket of its own:
# init, first backup (b1), unchanged re-backup (b2), full restore of the
# latest snapshot (compared with the data by diff -r, not timed), check
# reading all data. Each step runs under /usr/bin/time -v; the proxy's
# counts are taken and reset after every step.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/s3lib.sh"
ROOT=$(cd "$HERE/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH:$(go env GOPATH 2>/dev/null || echo /root/go)/bin"
WORK=${WORK:-/tmp/nightjar-bench-s3}
DATASET=${DATASET:-mixed}
LARGE_MIB=${LARGE_MIB:-512}
SEED=${SEED:-1}
TOOLS=${TOOLS:-nightjar restic restic-new}
RESTIC=${RESTIC:-restic}
RESTIC_NEW=${RESTIC_NEW:-}
VERSITYGW=${VERSITYGW:-versitygw}
KEEP=${KEEP:-0}
RES=${RESULTS:-$WORK/results/$(date -u +%Y%m%dT%H%M%SZ)}

B=$WORK/cmp
DATA=$B/data
PW=$B/password
GENDATA=$WORK/gendata
PROXY_BIN=$WORK/s3proxy

log() { printf '%s s3.sh: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "$*"; exit 1; }

case $DATASET in
source | large | mixed) ;;
*) die "unknown DATASET=$DATASET (source, large or mixed)" ;;
esac
case $LARGE_MIB in
'' | *[!0-9]* | 0) die "LARGE_MIB=$LARGE_MIB is not a positive number" ;;
esac
SOURCE_TREE=${SOURCE_TREE:-$(go env GOROOT)}
command -v "$VERSITYGW" >/dev/null || die "versitygw not found: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (apt-get install time)"
command -v python3 >/dev/null || die "python3 is needed for the report"
command -v curl >/dev/null || die "curl is needed to read the proxy's counts"

mkdir -p "$WORK" "$RES"
RES=$(cd "$RES" && pwd)
TSV=$RES/results.tsv
: >"$TSV"
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$TSV"; }

if [ -n "${NIGHTJAR_BIN:-}" ]; then
	NIGHTJAR=$NIGHTJAR_BIN
	NIGHTJAR_VERSION=${NIGHTJAR_VERSION:-prebuilt}
else
	NIGHTJAR=$WORK/nightjar
	log "building nightjar, gendata and s3proxy"
	(cd "$ROOT" && CGO_ENABLED=0 go build -o "$NIGHTJAR" .)
	NIGHTJAR_VERSION=$(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo unknown)
fi
(cd "$ROOT" && go build -o "$GENDATA" ./bench/compare/gendata && go build -o "$PROXY_BIN" ./bench/s3proxy)

found() { [ -n "$1" ] && command -v "$1" >/dev/null; }
tools=()
for t in $TOOLS; do
	case $t in
	nightjar) tools+=(nightjar) ;;
	restic) if found "$RESTIC"; then tools+=(restic); else log "restic: '$RESTIC' not found, left out"; fi ;;
	restic-new)
		if [ -z "$RESTIC_NEW" ]; then
			log "restic-new: RESTIC_NEW is not set, left out"
		elif found "$RESTIC_NEW"; then
			tools+=(restic-new)
		else
			log "restic-new: RESTIC_NEW=$RESTIC_NEW not found, left out"
		fi
		;;
	*) die "unknown tool $t (nightjar, restic, restic-new)" ;;
	esac
done
[ "${#tools[@]}" -gt 0 ] || die "no tool to run"

# --- the server and the proxy ------------------------------------------------
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ "$KEEP" != 1 ]; then rm -rf "$B"; fi
}
trap cleanup EXIT

rm -rf "$B"
mkdir -p "$B/gw"
start_s3

# use_tool TOOL: exports TOOL's repository (a bucket of its own, through
# the proxy), password and cache. Call it in a subshell.
use_tool() {
	local t=$1
	case $t in
	nightjar)
		export NIGHTJAR_REPOSITORY=s3:http://$PROXY/bench-$t/repo NIGHTJAR_PASSWORD_FILE=$PW
		export XDG_CACHE_HOME=$B/cache-$t XDG_CONFIG_HOME=$B/config-$t XDG_STATE_HOME=$B/state-$t
		;;
	restic | restic-new)
		export RESTIC_REPOSITORY=s3:http://$PROXY/bench-$t/repo RESTIC_PASSWORD_FILE=$PW RESTIC_CACHE_DIR=$B/cache-$t
		;;
	esac
}
bin_of() {
	case $1 in
	nightjar) echo "$NIGHTJAR" ;;
	restic) echo "$RESTIC" ;;
	restic-new) echo "$RESTIC_NEW" ;;
	esac
}

# timed TOOL STEP -- COMMAND...: as run.sh's, and the proxy's counts of
# the step.
timed() {
	local tool=$1 step=$2
	shift 2
	[ "$1" = -- ] && shift
	sync
	counts >/dev/null
	local base=$RES/$tool.$step t0 t1 rc=0
	t0=$(date +%s.%N)
	(
		use_tool "$tool"
		exec /usr/bin/time -v -o "$base.time" "$@" >"$base.out" 2>"$base.err"
	) || rc=$?
	t1=$(date +%s.%N)
	[ "$rc" = 0 ] || { tail -n 20 "$base.err" >&2; die "$tool $step failed with exit code $rc (logs in $base.*)"; }
	counts >"$base.counts"
	local wall cpu rss
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	cpu=$(sed -n 's/^\s*Percent of CPU this job got: \([0-9]*\)%.*/\1/p' "$base.time")
	rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): \([0-9]*\).*/\1/p' "$base.time")
	record "$tool" "$step.wall" "$wall"
	record "$tool" "$step.cpu" "$cpu"
	record "$tool" "$step.rss_kib" "$rss"
	python3 - "$base.counts" "$tool" "$step" >>"$TSV" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
tool, step = sys.argv[2], sys.argv[3]
print(f"{tool}\t{step}.requests\t{c['total']}")
for m, n in sorted(c["requests"].items()):
    print(f"{tool}\t{step}.req.{m}\t{n}")
print(f"{tool}\t{step}.bytes_in\t{c['bytes_in']}")
print(f"{tool}\t{step}.bytes_out\t{c['bytes_out']}")
for k, n in sorted(c["by_folder"].items()):
    print(f"{tool}\t{step}.folder.{k.replace(' ', '_')}\t{n}")
PY
	log "$tool $step: ${wall}s, CPU ${cpu}%, peak RSS $((rss / 1024)) MiB, $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$base.counts") requests"
}

# --- machine, versions, data -------------------------------------------------
record meta date "$(date -u +%Y-%m-%dT%H:%MZ)"
record meta cpu "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1) x $(nproc)"
record meta loadavg "$(cut -d' ' -f1-3 /proc/loadavg)"
record meta dataset "$DATASET"
# go install stamps no version into versitygw; its module's is in the binary.
record meta versitygw "$(go version -m "$(command -v "$VERSITYGW")" 2>/dev/null | awk '$1 == "mod" { print $3; exit }')"
for t in "${tools[@]}"; do
	case $t in
	nightjar) record meta "version.$t" "$NIGHTJAR_VERSION" ;;
	*) record meta "version.$t" "$("$(bin_of "$t")" version | awk '{ print $2 }')" ;;
	esac
done
printf 'nightjar-bench correct horse\n' >"$PW"
chmod 600 "$PW"
mkdir -p "$DATA"
log "making the $DATASET data set (seed $SEED)"
if [ "$DATASET" != large ]; then
	cp -a "$SOURCE_TREE" "$DATA/go"
	record meta source_tree "$SOURCE_TREE"
fi
if [ "$DATASET" != source ]; then
	"$GENDATA" large -out "$DATA/large" -mib "$LARGE_MIB" -seed "$SEED" >&2
	record meta large_mib "$LARGE_MIB"
fi
DATA_BYTES=$(find "$DATA" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
record meta data_bytes "$DATA_BYTES"
record meta data_files "$(find "$DATA" -type f | wc -l)"
find "$DATA" -type f -exec cat {} + >/dev/null

# --- the steps ---------------------------------------------------------------
for t in "${tools[@]}"; do
	# Each tool's bucket is made by its own init where it does that
	# (nightjar), else here, not measured (restic 0.14 makes it too).
	timed "$t" init -- "$(bin_of "$t")" init
done
for step in b1 b2; do
	for t in "${tools[@]}"; do timed "$t" "$step" -- "$(bin_of "$t")" backup "$DATA"; done
done
for t in "${tools[@]}"; do
	target=$B/restore-$t
	mkdir -p "$target"
	settle
	timed "$t" restore -- "$(bin_of "$t")" restore latest --target "$target"
	if diff -r -q --no-dereference "$DATA" "$target$DATA" >"$RES/$t.verify" 2>&1; then
		record "$t" restore.identical yes
	else
		record "$t" restore.identical NO
		log "$t: restored tree differs from the data (see $RES/$t.verify)"
	fi
	rm -rf "$target"
done
for t in "${tools[@]}"; do timed "$t" check -- "$(bin_of "$t")" check --read-data; done

log "results in $TSV"
python3 "$HERE/s3report.py" "$TSV" | tee "$RES/table.md"
