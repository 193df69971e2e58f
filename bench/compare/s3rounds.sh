#!/usr/bin/env bash
# Alternating rounds of restore and check --read-data on the buckets that a
# kept run of s3.sh left (KEEP=1), for comparing binaries on the same
# repositories: several nightjar builds read the nightjar bucket, restic
# reads its own. See docs/PERFORMANCE.md (issue 15).
#
#   KEEP=1 WORK=/tmp/s3k TOOLS="nightjar restic-new" RESTIC_NEW=/tmp/peers/restic bench/compare/s3.sh
#   WORK=/tmp/s3k ROUNDS=6 bench/compare/s3rounds.sh nightjar=/tmp/nj-main nightjar=/tmp/nj-new restic-new=/tmp/peers/restic
#
# Each argument is BUCKET_TOOL=BINARY: the tool whose bucket (bench-TOOL)
# and password the binary reads, as s3.sh named them. Within a round the
# arguments take turns, in order on odd rounds and reversed on even ones.
# Before each restore, as in s3.sh: the target removed, sync, and as root
# the caches dropped and the buckets read back (DROP_CACHES=0 leaves them).
# The first round's restores are compared with the data (diff -r).
#
# Environment: WORK (required: s3.sh's WORK), ROUNDS=6, STEPS="restore
# check", VERSITYGW=versitygw, RESULTS=DIR.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/s3lib.sh"
export PATH="/usr/local/go/bin:$PATH:$(go env GOPATH 2>/dev/null || echo /root/go)/bin"
WORK=${WORK:?WORK must be the folder of a kept s3.sh run}
ROUNDS=${ROUNDS:-6}
STEPS=${STEPS:-restore check}
VERSITYGW=${VERSITYGW:-versitygw}
B=$WORK/cmp
PROXY_BIN=$WORK/s3proxy
RES=${RESULTS:-$WORK/rounds/$(date -u +%Y%m%dT%H%M%SZ)}

log() { printf '%s s3rounds.sh: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "$*"; exit 1; }
[ $# -ge 1 ] || die "usage: WORK=DIR $0 TOOL=BINARY..."
[ -d "$B/gw" ] || die "$B/gw holds no buckets: run s3.sh with KEEP=1 and the same WORK first"
[ -x "$PROXY_BIN" ] || die "$PROXY_BIN is missing: s3.sh builds it"
for a in "$@"; do
	case $a in
	nightjar=* | restic=* | restic-new=*) [ -x "${a#*=}" ] || die "$a: no such binary" ;;
	*) die "$a: want nightjar=BINARY, restic=BINARY or restic-new=BINARY" ;;
	esac
done
mkdir -p "$RES"

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$B/rounds-target"
}
trap cleanup EXIT
start_s3

# run N ARG STEP ROUND: one timed step of argument number N.
TSV=$RES/rounds.tsv
: >"$TSV"
run() {
	local n=$1 arg=$2 step=$3 round=$4 tool bin base rc=0
	tool=${arg%%=*} bin=${arg#*=}
	base=$RES/$n.$step.$round
	local target=$B/rounds-target
	rm -rf "$target"
	mkdir -p "$target"
	[ "$step" = restore ] && settle
	counts >/dev/null
	local cmd=()
	case $tool/$step in
	nightjar/restore) cmd=("$bin" restore latest --target "$target") ;;
	nightjar/check) cmd=("$bin" check --read-data) ;;
	restic*/restore) cmd=("$bin" restore latest --target "$target") ;;
	restic*/check) cmd=("$bin" check --read-data) ;;
	esac
	(
		case $tool in
		nightjar)
			export NIGHTJAR_REPOSITORY=s3:http://$PROXY/bench-$tool/repo NIGHTJAR_PASSWORD_FILE=$B/password
			export XDG_CACHE_HOME=$B/cache-$tool XDG_CONFIG_HOME=$B/config-$tool XDG_STATE_HOME=$B/state-$tool
			;;
		*) export RESTIC_REPOSITORY=s3:http://$PROXY/bench-$tool/repo RESTIC_PASSWORD_FILE=$B/password RESTIC_CACHE_DIR=$B/cache-$tool ;;
		esac
		exec /usr/bin/time -f '%e %U %S %M' -o "$base.time" "${cmd[@]}" >"$base.out" 2>&1
	) || rc=$?
	[ "$rc" = 0 ] || { tail -n 20 "$base.out" >&2; die "$arg $step failed with exit code $rc"; }
	local requests
	requests=$(counts | python3 -c 'import json, sys; print(json.load(sys.stdin)["total"])')
	if [ "$step" = restore ] && [ "$round" = 1 ]; then
		diff -r -q --no-dereference "$B/data" "$target$B/data" >"$base.verify" 2>&1 || die "$arg: restored tree differs from the data (see $base.verify)"
	fi
	local load
	load=$(cut -d' ' -f1 /proc/loadavg)
	read -r wall user sys rss <"$base.time"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$arg" "$step" "$round" "$wall" "$user" "$sys" "$load" "$requests" >>"$TSV"
	log "$arg $step round $round: ${wall}s (user $user, sys $sys), peak RSS $((rss / 1024)) MiB, $requests requests, load $load"
}

args=("$@")
for round in $(seq 1 "$ROUNDS"); do
	order=$(seq 0 $((${#args[@]} - 1)))
	[ $((round % 2)) = 0 ] && order=$(seq $((${#args[@]} - 1)) -1 0)
	for step in $STEPS; do
		for i in $order; do run "$i" "${args[$i]}" "$step" "$round"; done
	done
done

python3 - "$TSV" <<'PY' | tee "$RES/table.md"
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
print("| step | binary | wall (s), median (min to max) | user (s) | sys (s) | requests (min to max) | rounds |")
print("|---|---|---:|---:|---:|---:|---:|")
keys = sorted({(r[2], int(r[0]), r[1]) for r in rows})
for step, n, arg in keys:
    sel = [r for r in rows if r[2] == step and int(r[0]) == n]
    col = lambda i: [float(r[i]) for r in sel]
    w, u, s, q = col(4), col(5), col(6), col(8)
    print(f"| {step} | {arg} | {statistics.median(w):.2f} ({min(w):.2f} to {max(w):.2f}) | {statistics.median(u):.2f} | {statistics.median(s):.2f} | {min(q):.0f} to {max(q):.0f} | {len(sel)} |")
PY
