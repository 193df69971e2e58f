#!/usr/bin/env bash
# A/B of nightjar builds or settings on one data set, warm cache: each
# variant in turn, every round on a fresh repository: first backup,
# unchanged re-backup, full restore (into a folder removed only after every
# variant has restored, as run.sh does), check --read-data. Prints a
# Markdown table of medians with the rounds in brackets. See
# docs/PERFORMANCE.md.
#
#   bench/compare/ab.sh 'old=/tmp/nightjar-d627673' 'new=/tmp/nightjar'
#   bench/compare/ab.sh 'gogc50=/tmp/nightjar' 'gogc100=env GOGC=100 /tmp/nightjar'
#
# Each argument is NAME=COMMAND: the command that runs nightjar for that
# variant (a binary, or env VAR=... binary).
#
# Environment:
#   WORK=/tmp/nightjar-bench   scratch folder
#   DATA=DIR                   data to back up (default: the mixed set of
#                              run.sh, made once under $WORK/ab/data: a copy
#                              of $(go env GOROOT) and gendata large)
#   ROUNDS=3                   rounds
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
WORK=${WORK:-/tmp/nightjar-bench}
ROUNDS=${ROUNDS:-3}
W=$WORK/ab
[ $# -ge 2 ] || { echo "usage: $0 NAME=COMMAND NAME=COMMAND [...]" >&2; exit 2; }

mkdir -p "$W"
if [ -z "${DATA:-}" ]; then
	DATA=$W/data
	if [ ! -d "$DATA" ]; then
		(cd "$ROOT" && go build -o "$WORK/gendata" ./bench/compare/gendata)
		mkdir -p "$DATA"
		cp -a "$(go env GOROOT)" "$DATA/go"
		"$WORK/gendata" large -out "$DATA/large" >&2
	fi
fi
find "$DATA" -type f -exec cat {} + >/dev/null
printf 'nightjar-bench correct horse\n' >"$W/password"
export NIGHTJAR_PASSWORD_FILE=$W/password
trap 'rm -rf "$W"/repo-* "$W"/restore-*' EXIT

m() { # label command...
	local label=$1
	shift
	sync
	/usr/bin/time -f "$label	%e	%U	%S	%M" -o "$W/one" "$@" >/dev/null
	cat "$W/one" >>"$W/times.tsv"
}

: >"$W/times.tsv"
names=()
for _ in $(seq 1 "$ROUNDS"); do
	names=()
	for v in "$@"; do
		name=${v%%=*}
		read -r -a cmd <<<"${v#*=}"
		names+=("$name")
		export NIGHTJAR_REPOSITORY=$W/repo-$name
		rm -rf "$NIGHTJAR_REPOSITORY"
		"${cmd[@]}" init >/dev/null
		m "first backup	$name" "${cmd[@]}" backup "$DATA"
		m "unchanged re-backup	$name" "${cmd[@]}" backup "$DATA"
	done
	for v in "$@"; do
		name=${v%%=*}
		read -r -a cmd <<<"${v#*=}"
		export NIGHTJAR_REPOSITORY=$W/repo-$name
		m "restore	$name" "${cmd[@]}" restore latest --target "$W/restore-$name"
		m "check	$name" "${cmd[@]}" check --read-data
	done
	rm -rf "$W"/restore-*
done

python3 - "$W/times.tsv" "${names[@]}" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    step, name, wall, user, system, rss = line.rstrip("\n").split("\t")
    rows.setdefault((step, name), []).append((float(wall), float(user) + float(system), int(rss) / 1024))
print("| step | variant | wall (s) | CPU user+sys (s) | peak RSS (MiB) |")
print("|---|---|---:|---:|---:|")
for step in ("first backup", "unchanged re-backup", "restore", "check"):
    for name in sys.argv[2:]:
        xs = rows[(step, name)]
        cells = []
        for i, fmt in ((0, "{:.2f}"), (1, "{:.1f}"), (2, "{:.0f}")):
            vals = [x[i] for x in xs]
            cells.append(fmt.format(statistics.median(vals)) + " (" + ", ".join(fmt.format(v) for v in vals) + ")")
        print(f"| {step} | {name} | " + " | ".join(cells) + " |")
PY
