#!/usr/bin/env python3
"""Times `toolbelt route --queries` at the held-out set's shape: 2,351 requests over
1,951 tools, with tool vectors warm on disk (issue 12's "<= 1 ms per query amortised")
and cold (every tool embedded first, "<= 5 ms").

We do not hold the held-out set, so this builds one of the same size from data we have:
- tools: our catalog (eval/catalog.jsonl) and LiveMCPBench's (target/eval/livemcpbench,
  from `python3 eval/external.py`), then near-duplicate variants of both (a suffix on the
  name, one parameter added, the description reworded at its start) until 1,951;
- requests: our queries (short, English and Chinese), LiveMCPBench's tasks (paragraphs)
  and our multi-turn conversations, taken in turn, each a distinct text, until 2,351.
Only timing comes out of it: the variants have no right answers.

Usage (from the repository root, after a release build and scripts/fetch-model.sh):
    python3 bench/route-scale.py [--bin target/release/toolbelt] [--runs 3] [--lexical]
        [--route-args '--embedder-precision int8']

Prints, per run, the wall time of the warm and cold batches and the per-request figure
amortised over all 2,351 requests, start-up included. Stdlib only.
"""
import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS, REQUESTS = 1951, 2351
REWORDINGS = ["Also: ", "Variant: ", "Alternative API. ", "Legacy endpoint. ", "v2. "]


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def catalog():
    base = [{k: t[k] for k in ("name", "description", "parameters") if k in t}
            for t in load(os.path.join(ROOT, "eval", "catalog.jsonl"))]
    lmb = os.path.join(ROOT, "target", "eval", "livemcpbench", "catalog.jsonl")
    if not os.path.isfile(lmb):
        sys.exit(f"{lmb} is missing: run python3 eval/external.py first")
    seen = {t["name"] for t in base}
    for line in load(lmb):
        for t in line.get("tools", [line]):
            if t.get("name") and t["name"] not in seen:
                seen.add(t["name"])
                base.append({"name": t["name"], "description": t.get("description") or "",
                             "parameters": t.get("inputSchema") or t.get("parameters") or {}})
    tools, n = list(base), 0
    while len(tools) < TOOLS:
        t = copy.deepcopy(base[n % len(base)])
        round_ = n // len(base) + 2
        t["name"] = f"{t['name']}_v{round_}"
        t["description"] = REWORDINGS[n % len(REWORDINGS)] + t["description"]
        props = t.setdefault("parameters", {}).setdefault("properties", {})
        if isinstance(props, dict):
            props[f"option_{round_}"] = {"type": "string", "description": "extra option of this variant"}
        tools.append(t)
        n += 1
    return tools


def requests():
    ours = [q["query"] for q in load(os.path.join(ROOT, "eval", "queries.jsonl"))]
    lmb = [q["query"] for q in load(os.path.join(ROOT, "target", "eval", "livemcpbench", "queries.jsonl"))]
    turns = [q["query"] for q in load(os.path.join(ROOT, "eval", "multiturn.jsonl"))]
    pools, out, i = [ours, lmb, turns], [], 0
    while len(out) < REQUESTS:
        pool = pools[i % 3]
        q = copy.deepcopy(pool[(i // 3) % len(pool)])
        rep = (i // 3) // len(pool)
        if rep:
            # A distinct text each time (the batch embeds each distinct text once).
            if isinstance(q, list):
                q[-1]["content"] += f" ({rep})"
            else:
                q += f" ({rep})"
        out.append({"id": f"r{i}", "query": q})
        i += 1
    return out


def run(binary, cat, queries, cache, extra):
    cmd = [binary, "route", "--catalog", cat, "--queries", queries, "--router", "hybrid",
           "--top-k", "10", "--format", "jsonl", "--vector-cache", cache] + extra
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    lines = [l for l in out.stdout.splitlines() if l.strip()]
    if queries != os.devnull and len(lines) != REQUESTS:
        sys.exit(f"expected {REQUESTS} rankings, got {len(lines)}")
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "toolbelt"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lexical", action="store_true",
                    help="route by words only (--no-embedder): the <= 0.1 ms target")
    ap.add_argument("--route-args", default="",
                    help="more arguments for toolbelt route, e.g. '--embedder-precision int8'")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cat, qs = os.path.join(tmp, "catalog.jsonl"), os.path.join(tmp, "requests.jsonl")
        tools = catalog()
        with open(cat, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(t, ensure_ascii=False) + "\n" for t in tools)
        with open(qs, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in requests())
        print(f"{len(tools)} tools, {REQUESTS} requests; binary {args.bin}")
        warm, cold = [], []
        for r in range(args.runs):
            cache = os.path.join(tmp, f"vectors-{r}")
            extra = (["--no-embedder"] if args.lexical else []) + args.route_args.split()
            c = run(args.bin, cat, qs, cache, extra)   # embeds every tool, then routes
            w = run(args.bin, cat, qs, cache, extra)   # tool vectors read back from disk
            cold.append(c)
            warm.append(w)
            print(f"run {r + 1}: warm {w:.2f} s = {w / REQUESTS * 1000:.3f} ms/request; "
                  f"cold {c:.2f} s = {c / REQUESTS * 1000:.3f} ms/request")
        print(f"median: warm {statistics.median(warm) / REQUESTS * 1000:.3f} ms/request, "
              f"cold {statistics.median(cold) / REQUESTS * 1000:.3f} ms/request "
              f"(amortised over {REQUESTS} requests, start-up included)")


if __name__ == "__main__":
    main()
