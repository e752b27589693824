#!/usr/bin/env python3
"""Seeds a toolbelt SQLite database for the console benchmark: N runs and their run-log
entries written directly (the server's own rows: `runs`, `run_log`), then M declarative
tools created through the public API (POST /api/v1/tools) of a running server.

usage: console-seed.py runs DB_PATH N        (server stopped or running; SQLite only)
       console-seed.py tools URL TOKEN M
"""
import json
import sqlite3
import sys
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

GROUPS = ["web", "files", "git", "search", "math", "mail", "calendar", "db", "cloud", "chat"]


def seed_runs(path, n):
    db = sqlite3.connect(path)
    now = int(time.time() * 1000)
    runs, log = [], []
    for i in range(n):
        at = now - (n - i) * 8_000  # one run every 8 s, the newest now
        rid = uuid.uuid4().hex
        status = "completed" if i % 10 else "failed"
        tool = f"bench_tool_{i % 2000:04d}"
        transcript = {
            "messages": [
                {"role": "user", "content": f"request {i}"},
                {"role": "assistant", "tool_calls": [{"id": "c1", "name": tool, "arguments": {"q": i}}]},
                {"role": "tool", "call_id": "c1", "name": tool, "content": "ok"},
                {"role": "assistant", "content": f"answer {i}"},
            ],
            "events": [{"seq": 1, "type": "started", "data": {"input": f"request {i}"}}],
            "usage": {"input_tokens": 300 + i % 50, "output_tokens": 40 + i % 7},
        }
        runs.append((rid, f"agent_{i % 5}", status, json.dumps({"input": f"request {i}", "conversation_id": rid}),
                     json.dumps(transcript), json.dumps({"answer": f"answer {i}"}), None if i % 10 else "boom",
                     "bench", at, at + 1500, at + 1500))
        log.append((at + 500, "tool_call", rid, "bench", f"agent_{i % 5}", tool, 1, "ok" if i % 17 else "error",
                    None if i % 17 else "failed", 5 + i % 90, None, None))
        log.append((at + 1500, "agent_run", rid, "bench", f"agent_{i % 5}", None, None, "ok", None, 1500,
                    300 + i % 50, 40 + i % 7))
    db.executemany(
        "INSERT INTO runs (id, agent, status, input, transcript, output, error, actor, created_at, updated_at, finished_at)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?)", runs)
    db.executemany(
        "INSERT INTO run_log (at, kind, run_id, actor, agent, tool, tool_version, outcome, error, duration_ms, tokens_in, tokens_out)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", log)
    db.commit()
    print(f"seeded {n} runs and {len(log)} run-log entries")


def seed_tools(url, token, m):
    def create(i):
        body = {
            "spec": {
                "name": f"bench_tool_{i:04d}",
                "description": f"Benchmark tool {i}: looks up item {i} in the {GROUPS[i % 10]} service",
                "tags": [GROUPS[i % 10]],
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
            },
            "definition": {"command": {"argv": ["echo", "{{q}}"]}},
        }
        req = urllib.request.Request(f"{url}/api/v1/tools", data=json.dumps(body).encode(), method="POST",
                                     headers={"authorization": f"Bearer {token}", "content-type": "application/json"})
        with urllib.request.urlopen(req) as r:
            return r.status

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(create, range(m)))
    bad = [s for s in statuses if s != 201]
    if bad:
        sys.exit(f"{len(bad)} tool creations failed")
    print(f"created {m} tools through the API")


if __name__ == "__main__":
    if sys.argv[1] == "runs":
        seed_runs(sys.argv[2], int(sys.argv[3]))
    else:
        seed_tools(sys.argv[2], sys.argv[3], int(sys.argv[4]))
