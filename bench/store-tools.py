#!/usr/bin/env python3
"""Stores N HTTP tools in a running `toolbelt serve` through its API (descriptions from
eval/catalog.jsonl and, when fetched, LiveMCPBench's catalog; names made unique), for the
bench scripts. With --wait, waits until /route ranks over all of them (the live registry
takes stored tools in from the change feed). Usage: bench/store-tools.py PORT N [--wait]"""
import json
import sys
import time
import urllib.request

port, n = sys.argv[1], int(sys.argv[2])
rows = [json.loads(l) for l in open("eval/catalog.jsonl")]
try:
    for l in open("target/eval/livemcpbench/catalog.jsonl"):
        rows += [{"name": t["name"], "description": t.get("description", "")} for t in json.loads(l)["tools"]]
except FileNotFoundError:
    pass


def post(path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"content-type": "application/json"})
    return json.loads(urllib.request.urlopen(req).read())


for i in range(n):
    row = rows[i % len(rows)]
    spec = {"name": f"{row['name'][:40]}_{i}", "description": row.get("description") or row["name"],
            "tags": ["bench"], "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
    post("/api/v1/tools", {"spec": spec, "definition": {"http": {"method": "GET", "url": f"https://example.invalid/{i}"}}})
if "--wait" in sys.argv:
    for _ in range(600):
        if post("/api/v1/route", {"input": "warm up"})["toolset_size"] >= n:
            break
        time.sleep(0.5)
print(f"stored {n} HTTP tools")
