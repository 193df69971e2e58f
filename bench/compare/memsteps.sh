#!/usr/bin/env bash
# Peak RSS and times of the unchanged re-backup and of check --read-data,
# nightjar against restic, alternating the tools over rounds, on one data
# set. See docs/PERFORMANCE.md, "Memory at every step".
#
#   bench/compare/memsteps.sh                         # the mixed set, 3 rounds
#   SET=tiny N=1000000 WORK=/dev/shm/nb bench/compare/memsteps.sh
#
# Setup (untimed, skipped for what WORK already holds): the data set in
# WORK/data (mixed: a copy of $(go env GOROOT) and gendata large, 2 x 512
# MiB; tiny: gendata tiny -n N -max 1024), a repository per tool
# (WORK/repo-nightjar, WORK/repo-restic) and a first backup into each.
# Then ROUNDS rounds of: re-backup by each tool, check --read-data by
# each tool; odd rounds start with nightjar, even ones with restic. Each
# step's wall time, CPU time (user+sys) and peak RSS come from
# /usr/bin/time -v, with the load average at its start; restic's scrypt
# memory (from its key file) is printed beside, as it is calibrated at
# init and sets a floor under every restic step, as Argon2id's memory
# (48 MiB for keys made now, 64 MiB before 2026-12; read from nightjar's
# key file) does under nightjar's.
#
# Environment: WORK=/tmp/nightjar-memsteps, SET=mixed|tiny, N=1000000,
# DATA=$WORK/data (an existing data set to use instead), ROUNDS=3, NIGHTJAR_BIN (default: built from this checkout with
# CGO_ENABLED=0), RESTIC=/tmp/peers/restic, RESULTS=DIR.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-/tmp/nightjar-memsteps}
SET=${SET:-mixed}
N=${N:-1000000}
ROUNDS=${ROUNDS:-3}
RESTIC=${RESTIC:-/tmp/peers/restic}
RES=${RESULTS:-$WORK/results/memsteps-$SET-$(date -u +%Y%m%dT%H%M%SZ)}
export PATH="/usr/local/go/bin:$PATH"

log() { printf '%s memsteps.sh: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "$*"; exit 1; }
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (apt-get install time)"
[ -x "$RESTIC" ] || die "restic not found at $RESTIC (RESTIC=PATH)"
case $SET in mixed | tiny) ;; *) die "SET=$SET: want mixed or tiny" ;; esac
case $ROUNDS in '' | *[!0-9]*) die "ROUNDS=$ROUNDS is not a whole number" ;; esac

mkdir -p "$WORK" "$RES"
RES=$(cd "$RES" && pwd)
NIGHTJAR=${NIGHTJAR_BIN:-$WORK/nightjar}
if [ -z "${NIGHTJAR_BIN:-}" ]; then
	log "building nightjar"
	(cd "$ROOT" && CGO_ENABLED=0 go build -o "$NIGHTJAR" .)
fi
[ -f "$WORK/password" ] || { printf 'nightjar-bench correct horse\n' >"$WORK/password"; chmod 600 "$WORK/password"; }
export NIGHTJAR_PASSWORD_FILE=$WORK/password RESTIC_PASSWORD_FILE=$WORK/password RESTIC_CACHE_DIR=$WORK/cache-restic
unset RESTIC_PASSWORD RESTIC_PASSWORD_COMMAND NIGHTJAR_PASSWORD NIGHTJAR_PASSWORD_COMMAND

DATA=${DATA:-$WORK/data}
if [ ! -d "$DATA" ]; then
	(cd "$ROOT" && go build -o "$WORK/gendata" ./bench/compare/gendata)
	log "making the $SET set in $DATA"
	if [ "$SET" = mixed ]; then
		mkdir -p "$DATA"
		cp -a "$(go env GOROOT)" "$DATA/go"
		"$WORK/gendata" large -out "$DATA/large" -mib 512 >&2
	else
		"$WORK/gendata" tiny -out "$DATA" -n "$N" -max 1024 >&2
	fi
fi
if [ ! -d "$WORK/repo-nightjar" ]; then
	log "nightjar: init and first backup (untimed)"
	"$NIGHTJAR" init -r "$WORK/repo-nightjar" >/dev/null
	"$NIGHTJAR" backup -r "$WORK/repo-nightjar" "$DATA" >/dev/null
fi
if [ ! -d "$WORK/repo-restic" ]; then
	log "restic: init and first backup (untimed)"
	"$RESTIC" -r "$WORK/repo-restic" init >/dev/null
	"$RESTIC" -r "$WORK/repo-restic" backup "$DATA" >/dev/null
fi

TSV=$RES/memsteps.tsv
: >"$TSV"
# run TOOL STEP ROUND: one measured step
run() {
	local tool=$1 step=$2 round=$3 base rc=0 load
	base=$RES/$tool.$step.$round
	load=$(cut -d' ' -f1 /proc/loadavg)
	case $tool/$step in
	nightjar/rebackup) /usr/bin/time -v -o "$base.time" "$NIGHTJAR" backup -r "$WORK/repo-nightjar" "$DATA" >"$base.out" 2>&1 || rc=$? ;;
	restic/rebackup) /usr/bin/time -v -o "$base.time" "$RESTIC" -r "$WORK/repo-restic" backup "$DATA" >"$base.out" 2>&1 || rc=$? ;;
	nightjar/check) /usr/bin/time -v -o "$base.time" "$NIGHTJAR" check --read-data -r "$WORK/repo-nightjar" >"$base.out" 2>&1 || rc=$? ;;
	restic/check) /usr/bin/time -v -o "$base.time" "$RESTIC" -r "$WORK/repo-restic" check --read-data >"$base.out" 2>&1 || rc=$? ;;
	esac
	[ "$rc" = 0 ] || { tail -n 20 "$base.out" >&2; die "$tool $step failed ($rc)"; }
	local rss wall cpu
	rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): \([0-9]*\).*/\1/p' "$base.time")
	wall=$(sed -n 's/^\s*Elapsed (wall clock) time (h:mm:ss or m:ss): \(.*\)/\1/p' "$base.time" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }')
	cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.2f", s }' "$base.time")
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$step" "$round" "$rss" "$wall" "$cpu" "$load" >>"$TSV"
	log "$tool $step round $round: peak RSS $((rss / 1024)) MiB, ${wall}s, CPU ${cpu}s, load $load"
}

for round in $(seq 1 "$ROUNDS"); do
	tools="nightjar restic"
	[ $((round % 2)) = 0 ] && tools="restic nightjar"
	for step in rebackup check; do
		for t in $tools; do run "$t" "$step" "$round"; done
	done
done

kdf=$(python3 -c 'import glob, json, sys
k = json.load(open(sorted(glob.glob(sys.argv[1] + "/keys/*"))[0]))
n, r, p = k["N"], k["r"], k["p"]
print(f"scrypt N={n} r={r} p={p}: {128 * n * r / 2**20:.0f} MiB")' "$WORK/repo-restic")
njkdf=$(python3 -c 'import glob, json, sys
with open(sorted(glob.glob(sys.argv[1] + "/keys/*"))[0], "rb") as f:
    k = json.loads(f.read().split(b"\n")[1])["kdf"]
print("Argon2id t=%d p=%d: %.0f MiB" % (k["time"], k["threads"], k["memory_kib"] / 1024))' "$WORK/repo-nightjar")
python3 - "$TSV" "$SET" "$kdf" "$("$NIGHTJAR" version | head -1)" "$("$RESTIC" version)" "$njkdf" <<'PY' | tee "$RES/memsteps.md"
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
print(f"Set {sys.argv[2]}; {sys.argv[4]}; {sys.argv[5]}; restic's key: {sys.argv[3]}; nightjar's key: {sys.argv[6]}.")
print()
print("| step | tool | peak RSS (MiB), median (rounds) | wall (s) | CPU user+sys (s) | load average at start |")
print("|---|---|---:|---:|---:|---|")
d = {}
for tool, step, rnd, rss, wall, cpu, load in rows:
    d.setdefault((step, tool), []).append((int(rss) / 1024, float(wall), float(cpu), load))
for (step, tool), v in sorted(d.items()):
    f = lambda i, fmt: f"{fmt.format(statistics.median(x[i] for x in v))} ({', '.join(fmt.format(x[i]) for x in v)})"
    print(f"| {step} | {tool} | {f(0, '{:.0f}')} | {f(1, '{:.2f}')} | {f(2, '{:.2f}')} | {', '.join(x[3] for x in v)} |")
PY
