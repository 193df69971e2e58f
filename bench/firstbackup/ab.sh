#!/bin/bash
# ab.sh: the first backup of DATA with two or more nightjar binaries, the
# binaries alternating round by round, each run into a fresh local
# repository, the page cache warm (each binary's first run is preceded by
# one untimed read of DATA). Prints one line per run (wall and CPU time,
# peak RSS, repository size with its blobs, pack files and any other files,
# the load average when it started), then each binary's medians.
#
#   bench/firstbackup/ab.sh [-r ROUNDS] [-d DATA] [-w WORK] BIN...
#
# ROUNDS defaults to 4, DATA to /tmp/firstbackup/data (build the mixed set
# as bench/compare/run.sh does: a copy of $(go env GOROOT) and
# `gendata large -mib 512 -seed 1`), WORK (repositories, password) to
# /tmp/firstbackup/work.
set -euo pipefail
ROUNDS=4 DATA=/tmp/firstbackup/data WORK=/tmp/firstbackup/work
while getopts r:d:w: o; do
	case $o in
	r) ROUNDS=$OPTARG ;;
	d) DATA=$OPTARG ;;
	w) WORK=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r ROUNDS] [-d DATA] [-w WORK] BIN..." >&2; exit 2; }
mkdir -p "$WORK"
PW=$WORK/password
[ -f "$PW" ] || { head -c 24 /dev/urandom | base64 >"$PW"; chmod 600 "$PW"; }
tar cf - "$DATA" 2>/dev/null | cat >/dev/null # warm the page cache
RES=$WORK/results
: >"$RES"
for r in $(seq 1 "$ROUNDS"); do
	for b in "$@"; do
		name=$(basename "$b")
		repo=$WORK/repo-$name
		rm -rf "$repo"
		NIGHTJAR_REPOSITORY=$repo NIGHTJAR_PASSWORD_FILE=$PW "$b" init >/dev/null
		load=$(cut -d' ' -f1 /proc/loadavg)
		NIGHTJAR_REPOSITORY=$repo NIGHTJAR_PASSWORD_FILE=$PW /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" \
			"$b" backup "$DATA" >/dev/null
		read -r wall user sys rss <"$WORK/time"
		size=$(du -sb "$repo" | cut -f1)
		# What the repository holds, to tell a size that stands out from
		# the chunker key's spread (a blob or pack too many, a file left).
		blobs=$(NIGHTJAR_REPOSITORY=$repo NIGHTJAR_PASSWORD_FILE=$PW "$b" list blobs | wc -l)
		packs=$(find "$repo/data" -type f | wc -l)
		others=$(find "$repo" -type f ! -path "$repo/data/*" ! -path "$repo/index/*" ! -path "$repo/snapshots/*" ! -path "$repo/keys/*" ! -name config | wc -l)
		awk -v n="$name" -v r="$r" -v w="$wall" -v u="$user" -v s="$sys" -v m="$rss" -v z="$size" -v l="$load" \
			-v nb="$blobs" -v np="$packs" -v no="$others" \
			'BEGIN { printf "%s round %d: wall %.2f s, cpu %.2f s, peak rss %d MiB, repository %.1f MB (%d blobs, %d pack files, %d other files), load %s\n", n, r, w, u + s, m / 1024, z / 1e6, nb, np, no, l }' |
			tee -a "$RES"
	done
done
for b in "$@"; do
	name=$(basename "$b")
	grep "^$name round" "$RES" | awk -v n="$name" '
		{ w[NR] = $5; c[NR] = $8 }
		function median(a, k,   i, j, t) {
			for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
		}
		END { printf "%s: median wall %.2f s, median cpu %.2f s over %d rounds\n", n, median(w, NR), median(c, NR), NR }'
done
