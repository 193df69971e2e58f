#!/usr/bin/env bash
# Fuzzes every fuzz target for a short time (FUZZTIME, 4s by default),
# one after another: the decoders of repository data, the parsers of
# schedules, filters and rates, the chunker, and restore's path builder.
# Each target's seed corpus is in its package's testdata/fuzz/FuzzXxx/ and
# also runs with every plain `go test`; an input that fails is written
# there by go test, to be kept as a seed once the fault is fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-4s}"

targets=(
	"./repo FuzzDecodeIndexBody"
	"./repo FuzzDecodePackHeader"
	"./repo FuzzParsePackTrailer"
	"./repo FuzzSplitHeader"
	"./repo FuzzDecodeKeyInfo"
	"./repo FuzzDecodeConfig"
	"./repo FuzzTreeJSON"
	"./repo FuzzEncodeTree"
	"./repo FuzzDecodeTree"
	"./repo FuzzLoadSnapshot"
	"./repo FuzzReadLock"
	"./repo FuzzLoadPin"
	"./repo FuzzLoadVerification"
	"./repo/chunker FuzzChunker"
	"./schedule FuzzParseCron"
	"./schedule FuzzParseSpec"
	"./schedule FuzzParseCalendarDuration"
	"./backup/limit FuzzParseRate"
	"./backup/filter FuzzMatch"
	"./restore FuzzTargetOf"
	"./cmd FuzzTerminalSafe"
)

# Every fuzz target in the tree is in the list: a new one that is not
# fails here, so that it cannot be left out of CI by mistake.
listed=$(printf '%s\n' "${targets[@]}" | awk '{print $2}' | sort)
found=$(grep -rhoE '^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\)' --include='*_test.go' . | sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/' | sort)
if [ "$listed" != "$found" ]; then
	echo "fuzz: the list in .ci/fuzz.sh differs from the fuzz targets in the tree:" >&2
	diff <(echo "$listed") <(echo "$found") >&2 || true
	exit 1
fi

# inputs NAME PKG: the number of inputs kept in PKG's corpus of NAME.
inputs() { { find "$2/testdata/fuzz/$1" -type f 2>/dev/null || true; } | wc -l; }

for t in "${targets[@]}"; do
	pkg=${t% *}
	name=${t#* }
	echo "fuzz: $name in $pkg for $fuzztime"
	before=$(inputs "$name" "$pkg")
	out=$(mktemp)
	if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$out"; then
		rm -f "$out"
		continue
	fi
	# Go's fuzzing engine may fail a run whose time ran out while it was
	# minimizing a new interesting input ("context deadline exceeded"),
	# with no failing input: that says nothing of the code, so the target
	# runs once more. A real failure always writes its input to the corpus.
	if [ "$(inputs "$name" "$pkg")" = "$before" ] && grep -q 'context deadline exceeded' "$out"; then
		echo "fuzz: $name: the engine's time ran out with no failing input; once more"
		rm -f "$out"
		go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
		continue
	fi
	rm -f "$out"
	exit 1
done
