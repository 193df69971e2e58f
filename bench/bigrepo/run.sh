#!/usr/bin/env bash
# A repository of many indexed blobs (issue 19, "10 million chunks"): peak
# RSS, wall and CPU time of snapshots, an unchanged re-backup of a small
# source, check (structure) and restore of one file, and the time to open
# the repository and load its index.
#
#   bench/bigrepo/run.sh                       # 1M and 10M blobs
#   NS=1000000 ROUNDS=3 bench/bigrepo/run.sh   # 1M only, three rounds
#
# The repositories are made once by bigrepo -make (main.go; 10M takes about
# 6 minutes and 1.3 GB) and kept in WORK for later runs. Before the timed
# steps, one backup of the small source (this tree's docs/ folder) is made
# into each repository, so that the timed backup is an unchanged one.
#
# Environment: WORK=/tmp/nightjar-bigrepo, NS="1000000 10000000",
# ROUNDS=1, NIGHTJAR_PASSWORD=bigrepo, NIGHTJAR=PATH and BIGREPO=PATH (default:
# built from this tree into WORK; for a baseline, build both from the other
# tree, bigrepo with this main.go copied in),
# LIMIT_MIB=512 (a step above it is marked FAIL and the exit status is 1).
# Both nightjar and bigrepo keep the local index cache of a repository of
# 1M blobs or more in the user's cache folder (XDG_CACHE_HOME): the first
# open of each repository writes it, later ones use it (bigrepo -no-cache
# and nightjar --no-cache do neither; a baseline from c744c96 or older has
# no cache). Delete the folder to time the open that writes it.
# COLD=1 (as root) adds an open with the page cache dropped before it
# (sync; echo 3 > /proc/sys/vm/drop_caches), step "open-cold": the open
# reads the cache's header, not its blocks, so it should not grow with it.
# Every figure is written with the load average when the step began into
# WORK/results.tsv (N, step, peak RSS MiB, wall s, user+sys s, load) and
# printed.
set -euo pipefail
unset GOMEMLIMIT GOGC
cd "$(dirname "$0")/../.."
WORK=${WORK:-/tmp/nightjar-bigrepo}
NS=${NS:-1000000 10000000}
ROUNDS=${ROUNDS:-1}
LIMIT_MIB=${LIMIT_MIB:-512}
mkdir -p "$WORK"
if [ -z "${BIGREPO:-}" ]; then
	BIGREPO=$WORK/bigrepo
	go build -o "$BIGREPO" ./bench/bigrepo
fi
if [ -z "${NIGHTJAR:-}" ]; then
	NIGHTJAR=$WORK/nightjar
	go build -o "$NIGHTJAR" .
fi
export NIGHTJAR_PASSWORD=${NIGHTJAR_PASSWORD:-bigrepo}
SRC=$(pwd)/docs
status=0

# measure N STEP COMMAND...: runs COMMAND under /usr/bin/time -v.
measure() {
	local n=$1 step=$2 load kib wall cpu verdict=PASS
	shift 2
	load=$(cut -d' ' -f1 /proc/loadavg)
	/usr/bin/time -v -o "$WORK/time.out" "$@" >"$WORK/step.out" 2>&1 || { cat "$WORK/step.out"; return 1; }
	kib=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/time.out")
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$WORK/time.out" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
	cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.2f", s }' "$WORK/time.out")
	if [ $((kib / 1024)) -gt "$LIMIT_MIB" ]; then verdict=FAIL; status=1; fi
	printf '%s\t%s\t%d\t%s\t%s\t%s\n' "$n" "$step" $((kib / 1024)) "$wall" "$cpu" "$load" >>"$WORK/results.tsv"
	printf '%9s  %-10s peak RSS %5d MiB  wall %6.2f s  cpu %6.2f s  load %s  %s\n' "$n" "$step" $((kib / 1024)) "$wall" "$cpu" "$load" "$verdict"
}

for n in $NS; do
	R=$WORK/repo-$n
	if [ ! -f "$R/config" ]; then
		"$BIGREPO" -dir "$R" -make -blobs "$n"
	fi
	if [ ! -f "$R.backed-up" ]; then
		"$NIGHTJAR" backup -r "$R" "$SRC" >/dev/null
		touch "$R.backed-up"
	fi
	for round in $(seq "$ROUNDS"); do
		measure "$n" open "$BIGREPO" -dir "$R"
		grep '^open' "$WORK/step.out"
		if [ "${COLD:-}" = 1 ]; then
			sync
			echo 3 >/proc/sys/vm/drop_caches
			measure "$n" open-cold "$BIGREPO" -dir "$R"
			grep '^open' "$WORK/step.out"
		fi
		measure "$n" snapshots "$NIGHTJAR" snapshots -r "$R"
		measure "$n" backup "$NIGHTJAR" backup -r "$R" "$SRC"
		measure "$n" check "$NIGHTJAR" check -r "$R"
		rm -rf "$WORK/restored"
		measure "$n" restore "$NIGHTJAR" restore -r "$R" small --target "$WORK/restored" --include /small/f03
		test -f "$WORK/restored/small/f03"
	done
done
exit $status
