#!/usr/bin/env bash
# A/B of the garbage collector setting on one nightjar binary: nightjar sets
# GOGC=50 itself unless GOGC is in the environment, so the same binary runs
# once with GOGC=100 (Go's default) and once without, in alternation, each
# time on a fresh repository: first backup, full restore, check --read-data,
# page cache dropped before each. See docs/PERFORMANCE.md.
#
#   NIGHTJAR_BIN=/path/to/nightjar [ROUNDS=3] bench/compare/ab-gogc.sh
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-/tmp/nightjar-bench}
ROUNDS=${ROUNDS:-3}
export PATH="/usr/local/go/bin:$PATH"
W=$WORK/ab
NJ=${NIGHTJAR_BIN:-$WORK/nightjar}
if [ -z "${NIGHTJAR_BIN:-}" ]; then (cd "$ROOT" && go build -o "$NJ" .); fi
(cd "$ROOT" && go build -o "$WORK/gendata" ./bench/compare/gendata)

rm -rf "$W"
mkdir -p "$W"
trap 'rm -rf "$W/data" "$W/repo" "$W/t"' EXIT
"$WORK/gendata" gen -out "$W" -seed 1 >&2
printf 'nightjar-bench correct horse\n' >"$W/password"
export NIGHTJAR_REPOSITORY=$W/repo NIGHTJAR_PASSWORD_FILE=$W/password
unset GOGC

m() { # label command...
	local label=$1
	shift
	sync
	if [ -w /proc/sys/vm/drop_caches ]; then echo 3 >/proc/sys/vm/drop_caches; fi
	/usr/bin/time -f "$label	%e	%U	%S	%M" -o "$W/one" "$@" >/dev/null
	cat "$W/one" >>"$W/times.tsv"
}

: >"$W/times.tsv"
for _ in $(seq 1 "$ROUNDS"); do
	for g in 100 50; do
		if [ "$g" = 100 ]; then env=(env GOGC=100); else env=(env); fi
		rm -rf "$W/repo" "$W/t"
		"$NJ" init >/dev/null
		m "backup GOGC=$g" "${env[@]}" "$NJ" backup "$W/data"
		m "restore GOGC=$g" "${env[@]}" "$NJ" restore latest --target "$W/t"
		m "check GOGC=$g" "${env[@]}" "$NJ" check --read-data
	done
done

python3 - "$W/times.tsv" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, wall, user, system, rss = line.rstrip("\n").split("\t")
    rows.setdefault(label, []).append((float(wall), float(user) + float(system), int(rss) / 1024))
print("| step | wall (s) | CPU user+sys (s) | peak RSS (MiB) |")
print("|---|---:|---:|---:|")
for step in ("backup", "restore", "check"):
    for g in ("100", "50"):
        xs = rows[f"{step} GOGC={g}"]
        cells = []
        for i, fmt in ((0, "{:.2f}"), (1, "{:.1f}"), (2, "{:.0f}")):
            vals = [x[i] for x in xs]
            cells.append(fmt.format(statistics.median(vals)) + " (" + ", ".join(fmt.format(v) for v in vals) + ")")
        print(f"| {step}, GOGC={g} | " + " | ".join(cells) + " |")
EOF
