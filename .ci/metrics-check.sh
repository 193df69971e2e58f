#!/usr/bin/env bash
# Checks the metrics a real scheduler pass writes: builds nightjar, runs
# one tick of config.example.toml (a copy, in a temporary folder, with a
# [metrics] textfile added), and runs promtool check metrics on the
# textfile it wrote. It also fails when the pass's backup is missing from
# the file. .ci/run calls it; it needs promtool (Debian's prometheus).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

CGO_ENABLED=0 go build -o "$work/nightjar" .
mkdir -p "$work/testdata" "$work/metrics"
cp config.example.toml "$work/nightjar.toml"
cp -r testdata/demo "$work/testdata/demo"
printf '\n[metrics]\ntextfile = "metrics/nightjar.prom"\n' >>"$work/nightjar.toml"

"$work/nightjar" job run sample --config "$work/nightjar.toml" >/dev/null
"$work/nightjar" tick --config "$work/nightjar.toml"

textfile="$work/metrics/nightjar.prom"
if [ ! -s "$textfile" ]; then
	echo "metrics-check: tick wrote no textfile at $textfile" >&2
	exit 1
fi
promtool check metrics <"$textfile"
if ! grep -qx 'nightjar_backup_last_run_status{job="sample",status="succeeded"} 1' "$textfile"; then
	echo "metrics-check: the textfile does not show the pass's succeeded backup of job sample:" >&2
	cat "$textfile" >&2
	exit 1
fi
echo "metrics-check: the textfile of a real pass passes promtool check metrics ($(grep -vc '^#' "$textfile") series)"
