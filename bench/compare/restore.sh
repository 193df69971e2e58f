#!/usr/bin/env bash
# Restore, measured fairly: nightjar against restic on one data set, the
# tools alternating over the rounds, the kernel's dirty pages written out
# and the page cache emptied before every timed restore, each restore timed
# without and with the `sync` that writes out what it left in the page
# cache. Prints a Markdown table of medians with the spread (min–max). See
# docs/PERFORMANCE.md, "Restore, measured fairly".
#
#   bench/compare/restore.sh                      # small-file set, 5 rounds
#   DATASET=mixed bench/compare/restore.sh        # the mixed set of run.sh
#   NIGHTJAR_BIN=/tmp/nj-old RESTIC=/tmp/peers/restic bench/compare/restore.sh
#
# Environment:
#   WORK=/tmp/nightjar-bench-restore  scratch folder (must be on the file
#                              system to measure: ext4 here; see df -T)
#   DATASET=small              small   a copy (cp -a) of $(go env GOROOT)
#                                      (~15,000 files) and two files of
#                                      LARGE_MIB=96 MiB each (gendata large)
#                              mixed   the same tree and two files of
#                                      LARGE_MIB=512 MiB each (run.sh's mixed)
#   LARGE_MIB                  size of each big file (see DATASET)
#   ROUNDS=5                   rounds; the order of the tools turns by one
#                              each round (nightjar first in the first)
#   RESTIC=/tmp/peers/restic   restic binary (0.19.1 there)
#   NIGHTJAR_BIN=PATH          nightjar binary (default: built from this checkout)
#   NIGHTJAR_BASE=PATH         a second nightjar binary, measured as nightjar-base
#                              on nightjar's repository (an earlier build, say);
#                              unset: left out
#   WARM_REPO=1                after the page cache is emptied, the tool's
#                              repository is read once, so that both tools read
#                              it from memory; 0 leaves it cold
#   KEEP=0                     1 keeps data set and repositories (and reuses
#                              them on the next run with the same DATASET)
#   RESULTS=DIR                where times.tsv and table.md go
#                              (default $WORK/results/<UTC time>)
#
# Before each timed restore: the previous target is removed, `sync` writes
# every dirty page out, the page cache, dentries and inodes are dropped
# (echo 3 >/proc/sys/vm/drop_caches, as root; without root a log line says
# the cache stays), and with WARM_REPO=1 the repository is read back. The
# restore runs under /usr/bin/time -f (wall, user, sys, peak RSS); a `sync`
# right after it is timed on its own. "restore" is the tool's time alone;
# "restore + sync" adds that sync: the time until the restored data is on
# the disk, whichever tool left more of it in the page cache. The first
# round's restores are compared with the data (diff -r, not timed).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
WORK=${WORK:-/tmp/nightjar-bench-restore}
DATASET=${DATASET:-small}
ROUNDS=${ROUNDS:-5}
RESTIC=${RESTIC:-/tmp/peers/restic}
WARM_REPO=${WARM_REPO:-1}
KEEP=${KEEP:-0}
RES=${RESULTS:-$WORK/results/$(date -u +%Y%m%dT%H%M%SZ)}

log() { printf '%s restore.sh: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "$*"; exit 1; }

case $DATASET in
small) LARGE_MIB=${LARGE_MIB:-96} ;;
mixed) LARGE_MIB=${LARGE_MIB:-512} ;;
*) die "unknown DATASET=$DATASET (small or mixed)" ;;
esac
case $LARGE_MIB in '' | *[!0-9]* | 0) die "LARGE_MIB=$LARGE_MIB is not a positive number" ;; esac
case $ROUNDS in '' | *[!0-9]* | 0) die "ROUNDS=$ROUNDS is not a positive number" ;; esac
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (apt-get install time)"
command -v python3 >/dev/null || die "python3 is needed for the table"
[ -x "$RESTIC" ] || die "RESTIC=$RESTIC is not executable"

mkdir -p "$WORK" "$RES"
RES=$(cd "$RES" && pwd)
if [ -n "${NIGHTJAR_BIN:-}" ]; then
	NIGHTJAR=$NIGHTJAR_BIN
	[ -x "$NIGHTJAR" ] || die "NIGHTJAR_BIN=$NIGHTJAR is not executable"
	NIGHTJAR_VERSION=prebuilt
else
	NIGHTJAR=$WORK/nightjar
	log "building nightjar"
	(cd "$ROOT" && CGO_ENABLED=0 go build -o "$NIGHTJAR" .)
	NIGHTJAR_VERSION=$(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo unknown)
fi

B=$WORK/$DATASET-$LARGE_MIB
DATA=$B/data
PW=$B/password
cleanup() {
	rm -rf "$B"/restore-*
	if [ "$KEEP" != 1 ]; then rm -rf "$B"; fi
}
trap cleanup EXIT

unset RESTIC_PASSWORD RESTIC_PASSWORD_COMMAND RESTIC_REPOSITORY RESTIC_REPOSITORY_FILE RESTIC_CACHE_DIR
unset NIGHTJAR_PASSWORD NIGHTJAR_PASSWORD_COMMAND NIGHTJAR_REPOSITORY
# in_tool TOOL COMMAND...: runs COMMAND with TOOL's repository, password
# and cache.
in_tool() { (
	case $1 in
	nightjar | nightjar-base)
		export NIGHTJAR_REPOSITORY=$B/repo-nightjar NIGHTJAR_PASSWORD_FILE=$PW
		export XDG_CACHE_HOME=$B/cache-nightjar XDG_CONFIG_HOME=$B/config-nightjar XDG_STATE_HOME=$B/state-nightjar
		;;
	restic) export RESTIC_REPOSITORY=$B/repo-restic RESTIC_PASSWORD_FILE=$PW RESTIC_CACHE_DIR=$B/cache-restic ;;
	esac
	shift
	exec "$@"
); }
tool_bin() {
	case $1 in
	nightjar) echo "$NIGHTJAR" ;;
	nightjar-base) echo "$NIGHTJAR_BASE" ;;
	restic) echo "$RESTIC" ;;
	esac
}
tools=(nightjar restic)
if [ -n "${NIGHTJAR_BASE:-}" ]; then
	[ -x "$NIGHTJAR_BASE" ] || die "NIGHTJAR_BASE=$NIGHTJAR_BASE is not executable"
	tools+=(nightjar-base)
fi

can_drop=0
if [ -w /proc/sys/vm/drop_caches ]; then can_drop=1; else log "cannot write /proc/sys/vm/drop_caches: the page cache stays as it is"; fi
settle() {
	sync
	if [ "$can_drop" = 1 ]; then echo 3 >/proc/sys/vm/drop_caches; fi
}

if [ ! -f "$B/ready" ]; then
	rm -rf "$B"
	mkdir -p "$DATA"
	printf 'nightjar-bench correct horse\n' >"$PW"
	chmod 600 "$PW"
	log "making the $DATASET set: a copy of $(go env GOROOT) and two files of $LARGE_MIB MiB"
	(cd "$ROOT" && go build -o "$WORK/gendata" ./bench/compare/gendata)
	cp -a "$(go env GOROOT)" "$DATA/go"
	"$WORK/gendata" large -out "$DATA/large" -mib "$LARGE_MIB" >&2
	for t in nightjar restic; do
		log "$t: init and backup (not timed)"
		in_tool "$t" "$(tool_bin $t)" init >"$B/$t.init.log" 2>&1 || die "$t init failed (see $B/$t.init.log)"
		in_tool "$t" "$(tool_bin $t)" backup "$DATA" >"$B/$t.backup.log" 2>&1 || die "$t backup failed (see $B/$t.backup.log)"
	done
	touch "$B/ready"
fi
files=$(find "$DATA" -type f | wc -l)
bytes=$(du -sb "$DATA" | cut -f1)
fstype=$(df -T "$B" | awk 'NR == 2 { print $2 }')
{
	echo "# data: $DATASET, $files files, $bytes bytes, on $fstype ($B)"
	echo "# nightjar: $NIGHTJAR_VERSION${NIGHTJAR_BASE:+; nightjar-base: $NIGHTJAR_BASE}; restic: $("$RESTIC" version | awk '{ print $2 }')"
	echo "# cache: $([ "$can_drop" = 1 ] && echo 'dropped before each restore' || echo 'not dropped (not root)'); repository $([ "$WARM_REPO" = 1 ] && echo 'read once after the drop' || echo 'cold')"
	printf 'tool\tround\twall\tuser\tsys\trss_kib\tsync\tload1\n'
} >"$RES/times.tsv"

for r in $(seq 1 "$ROUNDS"); do
	n=${#tools[@]}
	order=()
	for i in $(seq 0 $((n - 1))); do order+=("${tools[$(((i + r - 1) % n))]}"); done
	for t in "${order[@]}"; do
		target=$B/restore-$t
		rm -rf "$target"
		settle
		if [ "$WARM_REPO" = 1 ]; then find "$B/repo-${t%-base}" -type f -exec cat {} + >/dev/null; fi
		load=$(cut -d' ' -f1 /proc/loadavg)
		in_tool "$t" /usr/bin/time -f '%e %U %S %M' -o "$RES/$t.$r.time" \
			"$(tool_bin $t)" restore latest --target "$target" >"$RES/$t.$r.out" 2>&1 ||
			die "$t restore failed in round $r (see $RES/$t.$r.out)"
		s0=$(date +%s.%N)
		sync
		s1=$(date +%s.%N)
		read -r wall user sys rss <"$RES/$t.$r.time"
		syncs=$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f", b - a }')
		printf '%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$r" "$wall" "$user" "$sys" "$rss" "$syncs" "$load" >>"$RES/times.tsv"
		log "round $r $t: ${wall}s (user ${user}s, sys ${sys}s, $((rss / 1024)) MiB), then sync ${syncs}s, load $load"
		if [ "$r" = 1 ]; then
			diff -r "$DATA" "$target$DATA" >"$RES/$t.diff" 2>&1 || die "$t: the restored tree differs from the data (see $RES/$t.diff)"
		fi
	done
done
rm -rf "$B"/restore-*

python3 - "$RES/times.tsv" <<'EOF' | tee "$RES/table.md"
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if not l.startswith("#")]
head, rows = rows[0], rows[1:]
for l in open(sys.argv[1]):
    if l.startswith("#"):
        print(l[2:].rstrip())
print()
by = {}
for r in rows:
    d = dict(zip(head, r))
    by.setdefault(d["tool"], []).append(d)
def cell(vals, fmt="%.2f"):
    return (fmt + " (" + fmt + "–" + fmt + ")") % (statistics.median(vals), min(vals), max(vals))
print("| tool | restore s | restore + sync s | user + sys s | peak RSS MiB | load (1 min) |")
print("|---|---|---|---|---|---|")
med = {}
for tool, ds in by.items():
    wall = [float(d["wall"]) for d in ds]
    ws = [float(d["wall"]) + float(d["sync"]) for d in ds]
    cpu = [float(d["user"]) + float(d["sys"]) for d in ds]
    rss = [int(d["rss_kib"]) / 1024 for d in ds]
    load = [float(d["load1"]) for d in ds]
    med[tool] = (statistics.median(wall), statistics.median(ws))
    print("| %s | %s | %s | %s | %s | %s |" % (tool, cell(wall), cell(ws), cell(cpu), cell(rss, "%.0f"), cell(load, "%.1f")))
if "nightjar" in med and "restic" in med:
    print()
    print("nightjar / restic, medians: restore %.2f ×, restore + sync %.2f ×" % (
        med["nightjar"][0] / med["restic"][0], med["nightjar"][1] / med["restic"][1]))
print("(%d rounds; each cell: median (min–max))" % len({r[1] for r in rows}))
EOF
log "results in $RES"
