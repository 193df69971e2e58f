#!/usr/bin/env bash
# Builds nightjar and runs it end to end on this repository's docs folder:
# init, backup, snapshots, ls, restore --verify, check --read-data.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="/usr/local/go/bin:$PATH"

demo=${NIGHTJAR_DEMO_DIR:-/tmp/nightjar-demo}
rm -rf "$demo"
mkdir -p "$demo"
printf 'correct horse battery staple\n' > "$demo/password"
chmod 600 "$demo/password"
export NIGHTJAR_REPOSITORY="$demo/repo"
export NIGHTJAR_PASSWORD_FILE="$demo/password"

go build -o nightjar .
./nightjar init
./nightjar backup --tag demo docs
./nightjar snapshots
./nightjar ls latest
./nightjar restore latest --target "$demo/restored" --verify
./nightjar check --read-data
diff -r docs "$demo/restored$(pwd)/docs"
echo "quickstart: the restored copy of docs is identical to the original"
