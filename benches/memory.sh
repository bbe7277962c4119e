#!/usr/bin/env bash
# The server's resident memory around a bulk load: starts the release binary on a fresh data
# directory with the given flags, loads `DOCS` documents (1,000,000 by default) through the crud
# bench (`insert_many` of 1,000 from 8 connections, then a full-scan phase that reads them all),
# and prints the peak resident size (VmHWM) and the resident size after 30 idle seconds.
#
#   cargo build --release --bin mayfly --bench crud
#   benches/memory.sh                      # the default --cacheSizeGB
#   benches/memory.sh --cacheSizeGB 0.25
#
# Linux only (/proc). Measures only: nothing here asserts on memory.
set -euo pipefail
cd "$(dirname "$0")/.."
DOCS=${DOCS:-1000000}
PORT=${PORT:-27190}
SETTLE=${SETTLE:-30}
bench=$(ls -t target/release/deps/crud-* | grep -v '\.d$' | head -1)
dir=$(mktemp -d)
target/release/mayfly --port "$PORT" --dbpath "$dir" --log-level warn "$@" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
sleep 1
rss() { awk -v f="$1" '$1 == f":" {printf "%.0f MiB", $2 / 1024}' "/proc/$server/status"; }
"$bench" --uri "mongodb://127.0.0.1:$PORT/?directConnection=true" --docs "$DOCS" \
  --phases scan --seconds 5 | grep -E "^\| full scan|loaded" || true
echo "flags: ${*:-(defaults)}; $DOCS documents: peak RSS $(rss VmHWM), after the load and scan $(rss VmRSS)"
sleep "$SETTLE"
echo "after $SETTLE idle seconds: RSS $(rss VmRSS); data directory $(du -sm "$dir" | cut -f1) MiB"
