#!/usr/bin/env bash
# Memory of `toolbelt serve` (release build) as runs accumulate: RSS after N1 and after N2 agent
# runs against a scripted OpenAI-compatible model (bench/scripted-model.py), each run with an
# input of INPUT_BYTES bytes. With a database an ended run leaves memory once stored (reads fall
# through to the store), so RSS should stay flat; the issue's target: RSS after 10,000 runs within
# 10 % of RSS after 1,000.
# Usage: [N1=1000] [N2=10000] [INPUT_BYTES=2000] [CONCURRENCY=16] bench/run-memory.sh [sqlite|postgres]
#        (postgres reads TOOLBELT_TEST_PG_URL; use a database of its own: runs are added to it)
set -euo pipefail
cd "$(dirname "$0")/.."
n1=${N1:-1000}; n2=${N2:-10000}; bytes=${INPUT_BYTES:-2000}; conc=${CONCURRENCY:-16}
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
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port); model_port=$(free_port)
pid=; model=
trap 'kill $pid $model 2>/dev/null || true; rm -rf "$work"' EXIT
python3 bench/scripted-model.py "$model_port" & model=$!
TOOLBELT_LOG=warn TOOLBELT_NO_EMBEDDER=1 OPENAI_BASE_URL="http://127.0.0.1:$model_port/v1" \
  OPENAI_API_KEY=bench TOOLBELT_MODEL=scripted \
  "$tb" serve --dev --addr "127.0.0.1:$port" --database-url "$db" --workspace "$work/ws" \
  > "$work/serve.log" 2>&1 &
pid=$!
until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.05; done
rss() { awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }
runs() { # N: starts N runs of the default agent, CONCURRENCY at a time, each waited for
  python3 - "$port" "$1" "$bytes" "$conc" <<'PY'
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
port, n, size, conc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
body = json.dumps({"input": ("x" * (size - 20)) + " say done"}).encode()
def one(_):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/agents/default/runs", body,
                                 {"content-type": "application/json"})
    return json.loads(urllib.request.urlopen(req).read())["status"]
with ThreadPoolExecutor(conc) as pool:
    statuses = list(pool.map(one, range(n)))
bad = [s for s in statuses if s != "succeeded"]
if bad:
    sys.exit(f"{len(bad)} runs did not succeed: {bad[:3]}")
PY
}
echo "idle RSS: $(rss) KiB"
runs "$n1"; sleep 1
at1=$(rss); echo "RSS after $n1 runs: $at1 KiB"
runs $(( n2 - n1 )); sleep 1
at2=$(rss); echo "RSS after $n2 runs: $at2 KiB"
python3 -c "print(f'growth from {$n1} to {$n2} runs: {($at2 - $at1) / $at1 * 100:+.1f} %')"
