#!/usr/bin/env bash
# Runs nightjar's main job end to end on config.example.toml as shipped:
# the scheduler runs the job "sample", which backs up testdata/demo/sample
# into ./demo-repo (created on first use); then the snapshot is listed,
# restored with verification and compared with the original.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="/usr/local/go/bin:$PATH"

# One static binary: no cgo, so nothing but the kernel is needed to run it.
CGO_ENABLED=0 go build -o nightjar .
./nightjar job run sample --wait --config config.example.toml
./nightjar runs --config config.example.toml --limit 5

export NIGHTJAR_REPOSITORY=demo-repo
export NIGHTJAR_PASSWORD_FILE=testdata/demo/password
./nightjar snapshots --tag demo
rm -rf demo-restore
./nightjar restore latest --target demo-restore --verify
diff -r testdata/demo/sample "demo-restore$(pwd)/testdata/demo/sample"
echo "quickstart: the restored copy of testdata/demo/sample is identical to the original"
