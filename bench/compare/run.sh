#!/usr/bin/env bash
# Side-by-side benchmark: nightjar against restic, a second restic, kopia
# (default settings and with zstd compression) and borg on the same data
# set, each tool with its default settings, each on a fresh repository of
# its own. See docs/PERFORMANCE.md for what it measures and results.
#
#   bench/compare/run.sh            # 3 rounds of the mixed set (~5 minutes a round with all six
#                                   # tools on 2 cores), then a Markdown table of the medians
#   DATASET=large LARGE_MIB=32 ROUNDS=1 KOPIA=/path/to/kopia RESTIC_NEW=/path/to/restic \
#     bench/compare/run.sh          # a quick run
#
# Environment:
#   WORK=/tmp/nightjar-bench   scratch folder (data set, repositories, restores)
#   DATASET=mixed              the data set, always in one folder $WORK/cmp/data:
#                              source     a copy (cp -a) of the Go toolchain tree
#                                         $(go env GOROOT) (~15,000 files, ~240 MB),
#                                         as data/go
#                              large      two files of LARGE_MIB MiB each, as
#                                         data/large/random-<N>M.bin (incompressible) and
#                                         data/large/compressible-<N>M.txt (text-like,
#                                         zstd ~3:1), from gendata large
#                              mixed      source and large together (the default, and
#                                         the set the project's targets are stated on)
#                              generated  the older ~1 GiB generated set of gendata gen
#   LARGE_MIB=512              size of each large file (smaller for quick runs)
#   SOURCE_TREE=$(go env GOROOT)  the tree copied for source and mixed
#   TOOLS="nightjar restic restic-new kopia kopia-zstd borg"
#                              tools to run, by id; missing ones are left out
#                              with a log line
#   RESTIC=restic              restic binary (tool id restic; default from PATH)
#   RESTIC_NEW=PATH            a second restic binary (tool id restic-new); unset: left out
#   KOPIA=PATH                 kopia binary (tool ids kopia and kopia-zstd; default:
#                              kopia from PATH if there is one); KOPIA_VERSION=TEXT
#                              names it when its --version says no more than "v0-unofficial"
#   KOPIA_ZSTD=1               0 leaves out kopia-zstd (kopia with the global policy
#                              set to --compression=zstd right after repository create)
#   BORG=borg                  borg binary (tool id borg; default from PATH)
#   BORG_ENCRYPTION=repokey    borg has no default mode; repokey (AES-CTR +
#                              HMAC-SHA256) is the faster one on CPUs with SHA-NI
#   NIGHTJAR_BIN=PATH          nightjar binary to measure (default: built from
#                              this checkout); NIGHTJAR_VERSION=TEXT names it
#   ROUNDS=3                   rounds, each on a freshly made data set and fresh
#                              repositories; the table shows the medians with the
#                              rounds in brackets (results in RESULTS/roundN)
#   SEED=1                     data set and change seed
#   DROP_CACHES=0              1 drops the page cache before each measured step
#                              (needs root) and adds a second unchanged re-backup
#                              without dropping it; by default the cache is warm
#   KEEP=0                     1 keeps data set and repositories afterwards
#   RESULTS=DIR                where results.tsv, table.md and the logs go
#                              (default $WORK/results/<UTC time>)
#   PRUNE_MAX_UNUSED=5%        --max-unused of both tools' prune, the same so that
#                              both do the same work (restic's default is 5%,
#                              nightjar's 10%)
#   STEPS=all                  first: only init and the first backup (issue 19's
#                              first-backup target, several rounds in a few minutes)
#
# Every tool gets its repository, cache and config folders under $WORK/cmp
# (repo-ID, cache-ID, config-ID, ...), and the same password from one file
# (kopia takes it in KOPIA_PASSWORD, which only kopia's commands see).
# kopia: right after repository create (measured as init), kopia-zstd gets
# policy set --global --compression=zstd, and both get the full maintenance
# that kopia would otherwise run by itself at the end of the first backup
# (not measured). Its restore puts the newest snapshot's root folder (found
# with snapshot list --json, not measured) at $target$DATA, the path where
# the other tools restore the absolute path $DATA under $target.
#
# Steps, in this order, each tool in turn within a step:
#   the data set is made; the kernel's caches are emptied (as root), then
#     every data file is read once so that all tools start from the same
#     warm page cache;
#   init; first backup;
#   unchanged re-backup (with DROP_CACHES=1: with a cold cache, then again
#     with a warm one);
#   the change: for source, large and mixed, gendata change (1% of the small
#     files, rounded up, get one span of up to 4 KiB overwritten in place;
#     100 bytes are inserted at the start of every large compressible file);
#     for generated, gendata mutate (1% of the bytes overwritten in place,
#     100 bytes inserted at the start of the 3 big files);
#   backup of the changed tree; repository growth (du -sb after it minus
#     before it) and the tool's own figure of bytes added where it gives one;
#   caches emptied again (as root), data and repositories read once, then
#   full restore of the latest snapshot (then compared with the data by
#     diff -r, not timed; the restored trees are removed only after every
#     tool has restored);
#   check reading all data (nightjar check --read-data, restic check
#     --read-data, kopia snapshot verify --verify-files-percent=100, borg
#     check --verify-data);
#   prune (nightjar and restic only; kopia and borg are left out with a log
#     line): every snapshot but the newest is forgotten (forget --keep-last
#     1, not measured: the first backup and its unchanged copy, the
#     re-backup, whose data is the same), then prune --max-unused
#     $PRUNE_MAX_UNUSED is measured; the repository's shrinkage is recorded
#     and check --read-data (not measured) must pass after it.
# Each measured step runs under /usr/bin/time -v: wall seconds, CPU and
# peak RSS are recorded.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
WORK=${WORK:-/tmp/nightjar-bench}
DATASET=${DATASET:-mixed}
LARGE_MIB=${LARGE_MIB:-512}
SEED=${SEED:-1}
TOOLS=${TOOLS:-nightjar restic restic-new kopia kopia-zstd borg}
RESTIC=${RESTIC:-restic}
RESTIC_NEW=${RESTIC_NEW:-}
KOPIA=${KOPIA:-$(command -v kopia || true)}
KOPIA_ZSTD=${KOPIA_ZSTD:-1}
BORG=${BORG:-borg}
BORG_ENCRYPTION=${BORG_ENCRYPTION:-repokey}
DROP_CACHES=${DROP_CACHES:-0}
KEEP=${KEEP:-0}
RES=${RESULTS:-$WORK/results/$(date -u +%Y%m%dT%H%M%SZ)}
ROUNDS=${ROUNDS:-3}
PRUNE_MAX_UNUSED=${PRUNE_MAX_UNUSED:-5%}
STEPS=${STEPS:-all}
case $STEPS in
all | first) ;;
*) echo "run.sh: unknown STEPS=$STEPS (all or first)" >&2; exit 2 ;;
esac

B=$WORK/cmp
DATA=$B/data
PW=$B/password
GENDATA=$WORK/gendata

log() { printf '%s run.sh: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "$*"; exit 1; }

case $DATASET in
source | large | mixed | generated) ;;
*) die "unknown DATASET=$DATASET (source, large, mixed or generated)" ;;
esac
case $LARGE_MIB in
'' | *[!0-9]* | 0) die "LARGE_MIB=$LARGE_MIB is not a positive number" ;;
esac
SOURCE_TREE=${SOURCE_TREE:-$(go env GOROOT)}

mkdir -p "$WORK"
# nightjar under test: NIGHTJAR_BIN if given, else built from this checkout.
if [ -n "${NIGHTJAR_BIN:-}" ]; then
	NIGHTJAR=$NIGHTJAR_BIN
	[ -x "$NIGHTJAR" ] || die "NIGHTJAR_BIN=$NIGHTJAR is not executable"
	NIGHTJAR_VERSION=${NIGHTJAR_VERSION:-"$("$NIGHTJAR" --version 2>/dev/null | head -1 || echo prebuilt)"}
else
	NIGHTJAR=$WORK/nightjar
	log "building nightjar"
	(cd "$ROOT" && CGO_ENABLED=0 go build -o "$NIGHTJAR" .)
	NIGHTJAR_VERSION=$(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo unknown)
fi
log "building gendata"
(cd "$ROOT" && go build -o "$GENDATA" ./bench/compare/gendata)

# Several rounds: run this script once per round with the same binary, then
# report the medians.
if [ "$ROUNDS" -gt 1 ]; then
	tsvs=()
	for r in $(seq 1 "$ROUNDS"); do
		log "round $r of $ROUNDS"
		RESULTS=$RES/round$r ROUNDS=1 STEPS=$STEPS NIGHTJAR_BIN=$NIGHTJAR NIGHTJAR_VERSION=$NIGHTJAR_VERSION "$0"
		tsvs+=("$RES/round$r/results.tsv")
	done
	python3 "$HERE/report.py" "${tsvs[@]}" | tee "$RES/table.md"
	exit 0
fi

[ -x /usr/bin/time ] || die "/usr/bin/time is needed (apt-get install time)"
command -v python3 >/dev/null || die "python3 is needed for the report"

mkdir -p "$RES"
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
# found BIN: BIN is a command in PATH or an executable file
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
	kopia) if found "$KOPIA"; then tools+=(kopia); else log "kopia: not found (set KOPIA=/path/to/kopia), left out"; fi ;;
	kopia-zstd)
		if [ "$KOPIA_ZSTD" = 0 ]; then
			log "kopia-zstd: KOPIA_ZSTD=0, left out"
		elif found "$KOPIA"; then
			tools+=(kopia-zstd)
		else
			log "kopia-zstd: kopia not found (set KOPIA=/path/to/kopia), left out"
		fi
		;;
	borg) if found "$BORG"; then tools+=(borg); else log "borg: '$BORG' not found, left out"; fi ;;
	*) die "unknown tool $t (nightjar, restic, restic-new, kopia, kopia-zstd, borg)" ;;
	esac
done
[ "${#tools[@]}" -gt 0 ] || die "no tool to run"

record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$TSV"; }

can_drop=0
if [ "$DROP_CACHES" = 1 ] && [ -w /proc/sys/vm/drop_caches ]; then
	can_drop=1
elif [ "$DROP_CACHES" = 1 ]; then
	log "cannot write /proc/sys/vm/drop_caches: the page cache stays warm"
fi
# settle: empties the kernel's caches (page cache, dentries, inodes) when
# allowed, whatever DROP_CACHES says; the caller then reads back what is
# to be warm. On this machine a kernel full of caches from earlier rounds
# made creating files (restores) several times slower for every tool, and
# by how much depended on what ran before.
settle() {
	sync
	if [ -w /proc/sys/vm/drop_caches ]; then
		echo 3 >/proc/sys/vm/drop_caches
	else
		log "cannot write /proc/sys/vm/drop_caches: caches left as they are"
	fi
}
# drop: before a measured step, settle with DROP_CACHES=1, else only sync.
drop() {
	if [ "$can_drop" = 1 ]; then settle; else sync; fi
}

# Nobody's password comes from the environment but the file's.
unset RESTIC_PASSWORD RESTIC_PASSWORD_COMMAND RESTIC_REPOSITORY RESTIC_REPOSITORY_FILE RESTIC_CACHE_DIR
unset NIGHTJAR_PASSWORD NIGHTJAR_PASSWORD_COMMAND NIGHTJAR_REPOSITORY
unset BORG_PASSPHRASE BORG_PASSPHRASE_FD BORG_PASSCOMMAND BORG_REPO BORG_BASE_DIR
unset KOPIA_PASSWORD KOPIA_CONFIG_PATH KOPIA_CACHE_DIRECTORY KOPIA_LOG_DIR

# use_tool TOOL: exports TOOL's repository, password, cache and config
# folders. Call it in a subshell, so that no other tool sees them.
use_tool() {
	local t=$1
	case $t in
	nightjar)
		export NIGHTJAR_REPOSITORY=$B/repo-$t NIGHTJAR_PASSWORD_FILE=$PW
		export XDG_CACHE_HOME=$B/cache-$t XDG_CONFIG_HOME=$B/config-$t XDG_STATE_HOME=$B/state-$t
		;;
	restic | restic-new)
		export RESTIC_REPOSITORY=$B/repo-$t RESTIC_PASSWORD_FILE=$PW RESTIC_CACHE_DIR=$B/cache-$t
		;;
	kopia | kopia-zstd)
		KOPIA_PASSWORD=$(cat "$PW")
		export KOPIA_PASSWORD KOPIA_CONFIG_PATH=$B/config-$t/repository.config
		export KOPIA_CACHE_DIRECTORY=$B/cache-$t KOPIA_LOG_DIR=$B/logs-$t KOPIA_CHECK_FOR_UPDATES=false
		;;
	borg)
		# borg has no --password-file; BORG_PASSCOMMAND="cat FILE" is its equivalent.
		export BORG_REPO=$B/repo-$t BORG_PASSCOMMAND="cat $PW" BORG_BASE_DIR=$B/base-$t
		;;
	esac
}
# in_tool TOOL COMMAND...: runs COMMAND (not measured) with TOOL's environment
in_tool() { (
	use_tool "$1"
	shift
	exec "$@"
); }

# timed TOOL STEP [nodrop] -- COMMAND...: runs COMMAND with TOOL's
# environment under /usr/bin/time -v, records wall seconds, CPU percent and
# peak RSS (KiB). Output goes to $RES/TOOL.STEP.{out,err,time}.
timed() {
	local tool=$1 step=$2 dropit=1
	shift 2
	if [ "$1" = nodrop ]; then dropit=0; shift; fi
	[ "$1" = -- ] && shift
	[ "$dropit" = 1 ] && drop
	local base=$RES/$tool.$step t0 t1 rc=0
	t0=$(date +%s.%N)
	(
		use_tool "$tool"
		exec /usr/bin/time -v -o "$base.time" "$@" >"$base.out" 2>"$base.err"
	) || rc=$?
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

repo_bytes() { du -sb "$B/repo-$1" | cut -f1; }

# CMD=(...) for TOOL's init, backup (NAME names borg's archive), check
cmd_init() {
	case $1 in
	nightjar) CMD=("$NIGHTJAR" init) ;;
	restic) CMD=("$RESTIC" init) ;;
	restic-new) CMD=("$RESTIC_NEW" init) ;;
	kopia | kopia-zstd) CMD=("$KOPIA" repository create filesystem --path "$B/repo-$1") ;;
	borg) CMD=("$BORG" init --encryption="$BORG_ENCRYPTION") ;;
	esac
}
cmd_backup() { # tool name
	case $1 in
	nightjar) CMD=("$NIGHTJAR" backup --json "$DATA") ;;
	restic) CMD=("$RESTIC" backup --json "$DATA") ;;
	restic-new) CMD=("$RESTIC_NEW" backup --json "$DATA") ;;
	kopia | kopia-zstd) CMD=("$KOPIA" snapshot create --json "$DATA") ;;
	borg) CMD=("$BORG" create --json "::$2" "$DATA") ;;
	esac
}
cmd_check() {
	case $1 in
	nightjar) CMD=("$NIGHTJAR" check --read-data) ;;
	restic) CMD=("$RESTIC" check --read-data) ;;
	restic-new) CMD=("$RESTIC_NEW" check --read-data) ;;
	kopia | kopia-zstd) CMD=("$KOPIA" snapshot verify --verify-files-percent=100) ;;
	borg) CMD=("$BORG" check --verify-data) ;;
	esac
}
# bytes added by a backup according to the tool itself (nothing for kopia,
# whose snapshot create does not say)
added_bytes() { # tool outfile
	case $1 in
	# backup --json prints status objects, one a line, then the summary
	nightjar) python3 -c 'import json,sys
for l in open(sys.argv[1]):
    s = json.loads(l)
    if s.get("message_type") == "summary":
        print(s["data_added_packed"])' "$2" ;;
	# data_added counts blob bytes before compression; restic 0.17 and
	# later also give data_added_packed, what was stored
	restic | restic-new) python3 -c 'import json,sys
for l in open(sys.argv[1]):
    if "\"summary\"" in l:
        s = json.loads(l)
        print(s.get("data_added_packed", s["data_added"]))' "$2" ;;
	borg) python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["archive"]["stats"]["deduplicated_size"])' "$2" ;;
	esac
}
backup_step() { # step
	local t
	for t in "${tools[@]}"; do
		cmd_backup "$t" "$1"
		timed "$t" "$1" -- "${CMD[@]}"
		case $1 in b1 | b3)
			local added
			added=$(added_bytes "$t" "$RES/$t.$1.out")
			if [ -n "$added" ]; then record "$t" "$1.added" "$added"; fi
			;;
		esac
	done
}

# --- machine and versions --------------------------------------------------
record meta date "$(date -u +%Y-%m-%dT%H:%MZ)"
record meta cpu "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1) x $(nproc)"
record meta memory "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
record meta kernel "$(uname -r)"
record meta loadavg "$(cut -d' ' -f1-3 /proc/loadavg)"
record meta fs "$(df -T "$WORK" | awk 'NR == 2 { print $2 }')"
record meta cache "$([ "$can_drop" = 1 ] && echo 'dropped before each step' || echo 'warm (every data file read once before the first backup)')"
record meta go "$(go version | awk '{ print $3 }')"
record meta dataset "$DATASET"
record meta tools "${tools[*]}"
record meta prune_max_unused "$PRUNE_MAX_UNUSED"
KOPIA_VERSION=${KOPIA_VERSION:-}
if [ -z "$KOPIA_VERSION" ] && found "$KOPIA"; then
	KOPIA_VERSION=$("$KOPIA" --version 2>/dev/null | awk 'NR == 1 { print $1 }')
fi
for t in "${tools[@]}"; do
	case $t in
	nightjar) v=$NIGHTJAR_VERSION ;;
	restic) v=$("$RESTIC" version | awk '{ print $2 }') ;;
	restic-new) v=$("$RESTIC_NEW" version | awk '{ print $2 }') ;;
	kopia) v=$KOPIA_VERSION ;;
	kopia-zstd) v="$KOPIA_VERSION, zstd" ;;
	borg) v="$("$BORG" --version | awk '{ print $2 }') ($BORG_ENCRYPTION)" ;;
	esac
	record meta "version.$t" "$v"
done

# --- data set --------------------------------------------------------------
rm -rf "$B"
mkdir -p "$B"
printf 'nightjar-bench correct horse\n' >"$PW"
chmod 600 "$PW"
log "making the $DATASET data set (seed $SEED)"
case $DATASET in
generated) "$GENDATA" gen -out "$B" -seed "$SEED" >&2 ;;
*)
	mkdir -p "$DATA"
	if [ "$DATASET" != large ]; then
		[ -d "$SOURCE_TREE" ] || die "SOURCE_TREE=$SOURCE_TREE is not a folder"
		cp -a "$SOURCE_TREE" "$DATA/go"
		record meta source_tree "$SOURCE_TREE"
	fi
	if [ "$DATASET" != source ]; then
		"$GENDATA" large -out "$DATA/large" -mib "$LARGE_MIB" -seed "$SEED" >&2
		record meta large_mib "$LARGE_MIB"
	fi
	;;
esac
record meta data_bytes "$(find "$DATA" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')"
record meta data_files "$(find "$DATA" -type f | wc -l)"
settle
log "reading every data file once (warm page cache)"
find "$DATA" -type f -exec cat {} + >/dev/null

# --- init ------------------------------------------------------------------
for t in "${tools[@]}"; do
	cmd_init "$t"
	timed "$t" init nodrop -- "${CMD[@]}"
	case $t in
	kopia | kopia-zstd)
		if [ "$t" = kopia-zstd ]; then
			in_tool "$t" "$KOPIA" policy set --global --compression=zstd >"$RES/$t.policy.out" 2>&1 ||
				die "kopia-zstd: policy set --compression=zstd failed (see $RES/$t.policy.out)"
		fi
		# kopia runs its first full maintenance by itself at the end of
		# the first write command of a new repository (and then every
		# 24 hours, quick maintenance every hour): run it here, on the
		# empty repository and not measured, so that it falls into no
		# step for either kopia.
		in_tool "$t" "$KOPIA" maintenance run --full >"$RES/$t.maintenance.out" 2>&1 ||
			die "$t: maintenance run --full failed (see $RES/$t.maintenance.out)"
		;;
	esac
	# Which peers compress: restic from repository format 2 on (0.14 and
	# later create it by default), borg (lz4 by default), kopia only with
	# a compression policy.
	case $t in
	restic | restic-new)
		rv=$(in_tool "$t" "${CMD[0]}" cat config | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
		record meta "repo_version.$t" "$rv"
		record meta "compresses.$t" "$([ "$rv" -ge 2 ] && echo yes || echo no)"
		;;
	borg | kopia-zstd) record meta "compresses.$t" yes ;;
	kopia) record meta "compresses.$t" no ;;
	esac
done

# --- first backup ----------------------------------------------------------
backup_step b1
for t in "${tools[@]}"; do record "$t" size1 "$(repo_bytes "$t")"; done
if [ "$STEPS" = first ]; then
	log "results in $TSV (STEPS=first: the first backup only)"
	python3 "$HERE/report.py" "$TSV" | tee "$RES/table.md"
	exit 0
fi

# --- unchanged re-backup (cold then warm when the cache is dropped) --------
backup_step b2
if [ "$can_drop" = 1 ]; then
	for t in "${tools[@]}"; do
		cmd_backup "$t" b2w
		timed "$t" b2w nodrop -- "${CMD[@]}"
	done
fi
for t in "${tools[@]}"; do record "$t" size2 "$(repo_bytes "$t")"; done

# --- the change ------------------------------------------------------------
log "changing the data set"
case $DATASET in
generated) "$GENDATA" mutate -dir "$B" -seed "$SEED" >"$RES/change.out" ;;
*) "$GENDATA" change -dir "$DATA" -seed "$SEED" >"$RES/change.out" ;;
esac
cat "$RES/change.out" >&2
record meta change "$(sed 's/^gendata: //' "$RES/change.out")"

backup_step b3
for t in "${tools[@]}"; do record "$t" size3 "$(repo_bytes "$t")"; done

# --- full restore ----------------------------------------------------------
settle
log "reading the data and every repository once (warm page cache)"
find "$DATA" "$B"/repo-* -type f -exec cat {} + >/dev/null
for t in "${tools[@]}"; do
	target=$B/restore-$t
	rm -rf "$target"
	mkdir -p "$target"
	case $t in
	nightjar) timed "$t" restore -- "$NIGHTJAR" restore latest --target "$target" ;;
	restic) timed "$t" restore -- "$RESTIC" restore latest --target "$target" ;;
	restic-new) timed "$t" restore -- "$RESTIC_NEW" restore latest --target "$target" ;;
	kopia | kopia-zstd)
		# kopia restores a snapshot's root folder (found, not timed, from
		# the newest snapshot of $DATA) as the target folder itself, so it
		# goes to $target$DATA, where the others put the absolute path.
		in_tool "$t" "$KOPIA" snapshot list --json "$DATA" >"$RES/$t.snapshots.json" 2>"$RES/$t.snapshots.err"
		root=$(python3 -c 'import json,sys
snaps = json.load(open(sys.argv[1]))
print(max(snaps, key=lambda s: s["startTime"])["rootEntry"]["obj"])' "$RES/$t.snapshots.json")
		timed "$t" restore -- "$KOPIA" snapshot restore "$root" "$target$DATA"
		;;
	borg) timed "$t" restore -- env -C "$target" "$BORG" extract ::b3 ;;
	esac
	if diff -r -q --no-dereference "$DATA" "$target$DATA" >"$RES/$t.verify" 2>&1; then
		record "$t" restore.identical yes
	else
		record "$t" restore.identical NO
		log "$t: restored tree differs from the data (see $RES/$t.verify)"
	fi
done
# The restored trees go only now: on this ext4 (mounted with discard),
# creating files right after a large deletion was committed costs several
# times the system time, which would charge each tool for the deletion of
# the one before it.
for t in "${tools[@]}"; do
	rm -rf "$B/restore-$t"
done

# --- check reading all data ------------------------------------------------
for t in "${tools[@]}"; do
	cmd_check "$t"
	timed "$t" check -- "${CMD[@]}"
done

# --- prune after forgetting all but the newest snapshot ----------------------
for t in "${tools[@]}"; do
	case $t in
	nightjar) bin=$NIGHTJAR ;;
	restic) bin=$RESTIC ;;
	restic-new) bin=$RESTIC_NEW ;;
	*)
		log "$t: prune is measured for nightjar and restic only, left out"
		continue
		;;
	esac
	in_tool "$t" "$bin" forget --keep-last 1 >"$RES/$t.forget.out" 2>"$RES/$t.forget.err" ||
		die "$t: forget --keep-last 1 failed (see $RES/$t.forget.err)"
	before=$(repo_bytes "$t")
	timed "$t" prune -- "$bin" prune --max-unused "$PRUNE_MAX_UNUSED"
	record "$t" prune.freed "$((before - $(repo_bytes "$t")))"
	record "$t" size4 "$(repo_bytes "$t")"
	if in_tool "$t" "$bin" check --read-data >"$RES/$t.prunecheck.out" 2>"$RES/$t.prunecheck.err"; then
		record "$t" prune.check yes
	else
		record "$t" prune.check NO
		log "$t: check --read-data after prune failed (see $RES/$t.prunecheck.*)"
	fi
done

log "results in $TSV"
python3 "$HERE/report.py" "$TSV" | tee "$RES/table.md"
