#!/usr/bin/env bash
# Instructions per request of `toolbelt serve` (release build) under valgrind's callgrind:
# repeatable for one binary and input whatever else the machine is doing, so two builds can be
# compared on a busy machine where wrk's requests per second vary by ±10 %. Counts every thread
# of the server (the runtime's idle polling included) between the first and the last of N
# sequential keep-alive requests, after a warm-up.
#   1. POST /api/v1/tools/todo_list/call {"arguments": {}}
#   2. POST /api/v1/route {"input": "read the config file and list the open todos"}
# With TOOLS=N, N HTTP tools are first stored through the API as bench/server-load.sh stores
# them (eval/catalog.jsonl and, when fetched, LiveMCPBench's catalog), and /route ranks over all.
# Usage: TOOLBELT_BIN=path [N=500] [TOOLS=1000] bench/request-instructions.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "install valgrind first" >&2; exit 1; }
tb="${TOOLBELT_BIN:?set TOOLBELT_BIN to a release build of toolbelt}"
n=${N:-500}
work=$(mktemp -d)
mkdir -p "$work/ws"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pid=
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
TOOLBELT_NO_EMBEDDER=1 TOOLBELT_LOG=warn valgrind --tool=callgrind --instr-atstart=no \
  --callgrind-out-file="$work/cg.out" "$tb" serve --dev --addr "127.0.0.1:$port" \
  --database-url "sqlite://$work/t.db" --workspace "$work/ws" > "$work/serve.log" 2>&1 &
pid=$!
until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.5; done
if [ "${TOOLS:-0}" -gt 0 ]; then
  python3 bench/store-tools.py "$port" "$TOOLS" --wait
fi
python3 - "$port" "$n" "$pid" "$work" <<'PY'
import http.client, json, subprocess, sys, re, glob, os, time
port, n, pid, work = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
conn = http.client.HTTPConnection("127.0.0.1", int(port))
def post(path, body):
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    r = conn.getresponse(); r.read()
    assert r.status == 200, (path, r.status)
def ctl(*args):
    subprocess.run(["callgrind_control", *args, pid], check=True, capture_output=True)
def collected(tag):
    total = 0
    for f in glob.glob(os.path.join(work, "cg.out*")):
        text = open(f).read()
        if not re.search(r"^desc: Trigger: .*" + tag, text[:4000], re.M):
            continue
        m = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        if m:
            total += int(m.group(1))
        os.remove(f)
    return total
def window(tag, work_fn):
    ctl("-i", "on"); ctl("-z")
    start = time.monotonic()
    work_fn()
    elapsed = time.monotonic() - start
    ctl("-d", tag); ctl("-i", "off")
    return collected(tag), elapsed
# What the server does with no request (timers, pollers) per second, taken off below.
idle, idle_s = window("idle", lambda: time.sleep(10))
rate = idle / idle_s
print(f"idle: {rate:,.0f} instructions per second (taken off)")
cases = [("tool-call", "/api/v1/tools/todo_list/call", {"arguments": {}}),
         ("route", "/api/v1/route", {"input": "read the config file and list the open todos"})]
for name, path, body in cases:
    for _ in range(50):
        post(path, body)
    def requests():
        for _ in range(n):
            post(path, body)
    total, elapsed = window(name, requests)
    print(f"{name}: {(total - rate * elapsed) / n:,.0f} instructions per request "
          f"({n} requests in {elapsed:.1f} s; {total / n:,.0f} before the idle share)")
PY
