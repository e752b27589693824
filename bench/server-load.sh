#!/usr/bin/env bash
# Load figures of `toolbelt serve` (release build) with wrk (Debian package `wrk`):
#   1. POST /api/v1/tools/todo_list/call   (a cheap built-in tool; no-op-like)
#   2. POST /api/v1/route                  (hybrid router over the built-in tools)
#   3. idle RSS and start-up-to-ready time.
# Generator and server share this machine (2 cores): figures are a floor, not a ceiling.
# Usage: bench/server-load.sh [sqlite|postgres]   (postgres reads TOOLBELT_TEST_PG_URL)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "install wrk first: apt-get install -y wrk" >&2; exit 1; }
cargo build --release -p toolbelt --quiet
tb="${CARGO_TARGET_DIR:-$PWD/target}/release/toolbelt"
engine=${1:-sqlite}
work=$(mktemp -d)
case "$engine" in
  sqlite) db="sqlite://$work/t.db" ;;
  postgres) db="${TOOLBELT_TEST_PG_URL:?set TOOLBELT_TEST_PG_URL}" ;;
  *) echo "engine: sqlite or postgres" >&2; exit 2 ;;
esac
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start=$(date +%s%N)
TOOLBELT_LOG=warn "$tb" serve --dev --addr "127.0.0.1:$port" --database-url "$db" --workspace "$work" > "$work/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.005; done
ready_ms=$(( ($(date +%s%N) - start) / 1000000 ))
sleep 1
rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
echo "engine=$engine start-up to ready: ${ready_ms} ms (incl. process spawn and first sync); idle RSS: $((rss_kb / 1024)) MB"
cat > "$work/call.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = '{"arguments": {}}'
LUA
cat > "$work/route.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = '{"input": "read the config file and list the open todos"}'
LUA
echo "--- tool call (todo_list)"
wrk -t1 -c32 -d"${DURATION:-10}s" --latency -s "$work/call.lua" "http://127.0.0.1:$port/api/v1/tools/todo_list/call" | grep -E "Requests/sec|99%|50%|Non-2xx"
echo "--- route"
wrk -t1 -c32 -d"${DURATION:-10}s" --latency -s "$work/route.lua" "http://127.0.0.1:$port/api/v1/route" | grep -E "Requests/sec|99%|50%|Non-2xx"
