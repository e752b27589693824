#!/usr/bin/env bash
# Console page loads with 2,000 tools and 10,000 runs in the database.
# Seeds a fresh SQLite database (runs and run log directly, tools through the API), starts
# `toolbelt serve`, and measures each main page in Chromium (bench/../measure.mjs): median of
# 7 fresh navigations, from navigation start to the page's data rendered.
# usage: [TOOLBELT_BIN=target/release/toolbelt] [TOOLS=2000] [RUNS=10000] [LOADS=7] bench/console-load.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-browser.sh | grep -v '^browser ready' && true
bin="${TOOLBELT_BIN:-target/release/toolbelt}"
[ -x "$bin" ] || cargo build --release -p toolbelt --quiet
tmp=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$tmp"' EXIT
db="sqlite://$tmp/bench.db"
token=$("$bin" tokens create bench --scope admin --database-url "$db" | tail -n1 | awk '{print $NF}')
python3 bench/console-seed.py runs "$tmp/bench.db" "${RUNS:-10000}"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$tmp/ws"
RUST_LOG=warn TOOLBELT_RATE_LIMIT_PER_SECOND=0 "$bin" serve --database-url "$db" --addr "127.0.0.1:$port" --workspace "$tmp/ws" &
server=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
python3 bench/console-seed.py tools "http://127.0.0.1:$port" "$token" "${TOOLS:-2000}"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
node crates/toolbelt-console/tests/browser/measure.mjs "http://127.0.0.1:$port" "$token" "${LOADS:-7}"
