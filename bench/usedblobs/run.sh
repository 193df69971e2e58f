#!/usr/bin/env bash
# Peak RSS of prune's set of used blobs (repo.BlobUsage) and of prune
# (repo.Prune), with GOMEMLIMIT unset. Issue 13 wants it under 256 MiB for
# 1 million and 10 million referenced blobs.
#
#   bench/usedblobs/run.sh            # exits 1 when a case is over LIMIT_MIB
#
# Two kinds of case, each run once under /usr/bin/time -v:
#   stream 1M, stream 10M   BenchmarkBlobUsageStream (repo/used_internal_test.go):
#                           generated IDs through BlobUsage's sorters and join,
#                           without a repository (see there why)
#   repository REAL_BLOBS   usedblobs (main.go) on a generated local repository
#                           of REAL_BLOBS data blobs (default 1,000,000): the
#                           whole BlobUsage, tree walk and streamed index
#                           included (no LoadIndex)
#   prune REAL_BLOBS        usedblobs -prune on the same repository: forget
#                           snapshot "old" (a tenth of the blobs become unused),
#                           then the whole Prune with --max-unused 0 (every
#                           partly used pack is repacked), which streams the
#                           index instead of loading it
#
# Environment: WORK=/tmp/nightjar-usedblobs (the repository and the sorted
# runs: about 1.5 GB at 10M), LIMIT_MIB=256, REAL_BLOBS=1000000 (0: skip),
# KEEP=0 (1 keeps WORK).
set -euo pipefail
unset GOMEMLIMIT
cd "$(dirname "$0")/../.."
WORK=${WORK:-/tmp/nightjar-usedblobs}
LIMIT_MIB=${LIMIT_MIB:-256}
REAL_BLOBS=${REAL_BLOBS:-1000000}
mkdir -p "$WORK"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT
go test -c -o "$WORK/repo.test" ./repo
go build -o "$WORK/usedblobs" ./bench/usedblobs

status=0
# report NAME FILE: prints the peak RSS that /usr/bin/time wrote to FILE.
report() {
	local kib mib verdict=PASS
	kib=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$2")
	mib=$((kib / 1024))
	if [ "$mib" -gt "$LIMIT_MIB" ]; then verdict=FAIL; status=1; fi
	printf '%-22s peak RSS %5d MiB  %s (limit %d MiB)\n' "$1" "$mib" "$verdict" "$LIMIT_MIB"
}

for n in 1M 10M; do
	(cd "$WORK" && TMPDIR="$WORK" /usr/bin/time -v ./repo.test -test.run='^$' \
		-test.bench="BenchmarkBlobUsageStream/$n\$" -test.benchtime=1x >"$WORK/stream-$n.out" 2>"$WORK/stream-$n.time")
	grep Benchmark "$WORK/stream-$n.out"
	report "stream $n" "$WORK/stream-$n.time"
done

if [ "$REAL_BLOBS" -gt 0 ]; then
	rm -rf "$WORK/repo"
	"$WORK/usedblobs" -dir "$WORK/repo" -make -blobs "$REAL_BLOBS"
	TMPDIR="$WORK" /usr/bin/time -v "$WORK/usedblobs" -dir "$WORK/repo" 2>"$WORK/repo.time"
	report "repository $REAL_BLOBS" "$WORK/repo.time"
	TMPDIR="$WORK" /usr/bin/time -v "$WORK/usedblobs" -dir "$WORK/repo" -prune 2>"$WORK/prune.time"
	report "prune $REAL_BLOBS" "$WORK/prune.time"
fi
exit $status
