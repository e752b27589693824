#!/usr/bin/env bash
# Registration through the API: creates TOOLS (1,000) HTTP tools with `POST /api/v1/tools` on a
# fresh database of a release `toolbelt serve --dev`, over one kept-alive HTTP connection, and
# prints, per hundred, the server's CPU per create (CPU time of all the server's threads, read from
# /proc/<pid>/task/*/schedstat before and after the hundred, so background work such as the
# change-feed watcher counts) and the wall time per create; then the total wall time, and the ratio of the
# last hundred's CPU per create to the first's (the catalog grows tenfold in between: a ratio
# near 1 means a create costs the same whatever the catalog holds).
# After the last create the script checks that the last tool is served (GET /api/v1/tools/{name})
# and listed (GET /api/v1/tools), as its 201 promised.
# Generator and server share this machine (2 cores): figures include the client's share of the
# machine only through contention.
# Usage: [TOOLS=1000] [TOOLBELT_BIN=path] bench/register.sh [sqlite|postgres]
#        postgres: a database of its own is created on TOOLBELT_TEST_PG_URL's server (psql) and
#        dropped at the end.
# The multilingual encoder is off (TOOLBELT_NO_EMBEDDER=1): loading it would fall into the first
# hundred; the router ranks lazily, so creates never embed.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${TOOLBELT_BIN:-}" ] || cargo build --release -p toolbelt --quiet
tb="${TOOLBELT_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/release/toolbelt}"
engine=${1:-sqlite}
tools=${TOOLS:-1000}
work=$(mktemp -d)
mkdir -p "$work/ws"
pgdb=
case "$engine" in
  sqlite) db="sqlite://$work/t.db" ;;
  postgres)
    base="${TOOLBELT_TEST_PG_URL:?set TOOLBELT_TEST_PG_URL}"
    pgdb="toolbelt_bench_register_$$"
    psql -q "$base" -c "CREATE DATABASE $pgdb" >/dev/null
    db="${base%/*}/$pgdb"
    ;;
  *) echo "engine: sqlite or postgres" >&2; exit 2 ;;
esac
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  [ -z "$pgdb" ] || psql -q "$base" -c "DROP DATABASE IF EXISTS $pgdb" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
TOOLBELT_NO_EMBEDDER=1 TOOLBELT_LOG=warn "$tb" serve --dev --addr "127.0.0.1:$port" \
  --database-url "$db" --workspace "$work/ws" > "$work/serve.log" 2>&1 &
pid=$!
until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do
  kill -0 "$pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.01
done
sleep 1
echo "engine=$engine binary=$tb tools=$tools"
python3 - "$port" "$pid" "$tools" <<'PY'
import http.client, json, os, sys, time
port, pid, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rows = [json.loads(l) for l in open("eval/catalog.jsonl")]

def cpu_s():
    # Nanoseconds on a CPU, summed over the server's threads (/proc/<pid>/task/*/schedstat):
    # utime+stime of /proc/<pid>/stat count 10 ms ticks, too coarse for a hundred creates of
    # about 1 ms each. A thread that ended takes its time with it; the server's threads (tokio
    # workers, the SQLite connections' threads) live through the run.
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(open(f"/proc/{pid}/task/{task}/schedstat").read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total / 1e9

conn = http.client.HTTPConnection("127.0.0.1", port)
def request(method, path, body=None):
    headers = {"content-type": "application/json"} if body is not None else {}
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    return response.status, response.read()

hundred = 100
per = []
start = time.perf_counter()
for first in range(0, n, hundred):
    count = min(hundred, n - first)
    cpu0, wall0 = cpu_s(), time.perf_counter()
    for i in range(first, first + count):
        row = rows[i % len(rows)]
        spec = {"name": f"{row['name'][:40]}_{i}", "description": row.get("description") or row["name"],
                "tags": ["bench", f"group{i % 10}"],
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
        body = json.dumps({"spec": spec, "definition": {"http": {"method": "GET", "url": f"https://example.invalid/{i}"}}})
        status, text = request("POST", "/api/v1/tools", body)
        if status != 201:
            sys.exit(f"create {i}: HTTP {status}: {text[:300]!r}")
    cpu_ms = (cpu_s() - cpu0) * 1000 / count
    wall_ms = (time.perf_counter() - wall0) * 1000 / count
    per.append(cpu_ms)
    print(f"tools {first + 1:>5}-{first + count:<5} server CPU/create {cpu_ms:6.2f} ms   wall/create {wall_ms:6.2f} ms")
total = time.perf_counter() - start
last = f"{rows[(n - 1) % len(rows)]['name'][:40]}_{n - 1}"
status, _ = request("GET", f"/api/v1/tools/{last}")
if status != 200:
    sys.exit(f"the last tool created is not served: GET /api/v1/tools/{last} -> {status}")
status, text = request("GET", f"/api/v1/tools?limit=5000&q={last}")
names = {t["name"] for t in json.loads(text)["items"]} if status == 200 else set()
if last not in names:
    sys.exit(f"the last tool created is not listed by GET /api/v1/tools ({status})")
ratio = per[-1] / per[0] if per[0] > 0 else float("inf")
print(f"total wall for {n} creates: {total:.2f} s; CPU/create last hundred / first hundred: {ratio:.2f}")
PY
