#!/usr/bin/env python3
"""Learning from use, measured with a time split.

Usage (from the repository root, after building the CLI as eval/run.py does):
    python3 eval/learn.py [--set ours|livemcpbench] [--debug] [--router hybrid|bm25]

The queries of a set, in file order, stand for requests over time. The first half
is the past: each of its requests is written to a run log as a successful call of
each tool it needed (`{"tool", "request", "at", "outcome": "succeeded"}`), plus, for
every fourth one, a failed call of the best wrong tool the router ranked (which must
teach nothing). The second half is routed with and without `--learn-from` that log;
the table shows recall@1/5 and MRR on the second half. The gold labels stand in for
"the call succeeded": this measures the mechanism, not a real agent's log.
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402


def score(queries, ranked):
    n = len(queries)
    r1 = r5 = mrr = 0.0
    for q in queries:
        need = set(q["needed"])
        tools = ranked[q["id"]]
        r1 += len(need & set(tools[:1])) / len(need)
        r5 += len(need & set(tools[:5])) / len(need)
        first = next((i for i, t in enumerate(tools) if t in need), None)
        mrr += 0 if first is None else 1 / (first + 1)
    return r1 / n, r5 / n, mrr / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="ours", choices=["ours", "livemcpbench"])
    ap.add_argument("--debug", action="store_true")
    ap.add_argument("--router", default="hybrid")
    ap.add_argument("--weights", default="0.5", help="comma-separated --learn-weight values to compare")
    args = ap.parse_args()
    if args.debug:
        run.BIN = os.path.join(run.TARGET, "debug", "toolbelt")
    catalog_path, queries_path = run.SETS[args.set]
    queries = run.load_jsonl(queries_path)
    half = len(queries) // 2
    past, future = queries[:half], queries[half:]
    extra = ["--router", args.router]
    with tempfile.TemporaryDirectory() as tmp:
        past_path = os.path.join(tmp, "past.jsonl")
        with open(past_path, "w", encoding="utf-8") as f:
            for q in past:
                f.write(json.dumps({"id": q["id"], "query": q["query"]}, ensure_ascii=False) + "\n")
        past_ranked, _ = run.run_batch(extra, catalog_path, past_path, 10)
        wrong = {r["id"]: next((t for t in r["tools"] if t not in set(q["needed"])), None)
                 for r, q in zip(past_ranked, past)}
        log = os.path.join(tmp, "runlog.jsonl")
        with open(log, "w", encoding="utf-8") as f:
            for i, q in enumerate(past):
                for tool in q["needed"]:
                    f.write(json.dumps({"tool": tool, "request": q["query"], "at": i, "outcome": "succeeded"},
                                       ensure_ascii=False) + "\n")
                if i % 4 == 0 and wrong[q["id"]]:
                    f.write(json.dumps({"tool": wrong[q["id"]], "request": q["query"], "at": i, "outcome": "failed"},
                                       ensure_ascii=False) + "\n")
        future_path = os.path.join(tmp, "future.jsonl")
        with open(future_path, "w", encoding="utf-8") as f:
            for q in future:
                f.write(json.dumps({"id": q["id"], "query": q["query"]}, ensure_ascii=False) + "\n")
        rows = []
        learn = ["--learn-from", log, "--learn-now", str(half)]
        variants = [("without learning", [])]
        if args.router == "hybrid":
            variants += [(f"learned: similar past requests vote (weight {w})",
                          learn + ["--learn-into", "votes", "--learn-weight", w])
                         for w in args.weights.split(",")]
        variants += [(f"learned: requests added to tool documents (weight {w})",
                      learn + ["--learn-into", "documents", "--learn-weight", w])
                     for w in args.weights.split(",")]
        for label, more in variants:
            out, _ = run.run_batch(extra + more, catalog_path, future_path, 10)
            ranked = {r["id"]: r["tools"] for r in out}
            rows.append((label, *score(future, ranked)))
    print(f"Set {args.set}, router {args.router}: {len(past)} earlier requests learned, "
          f"{len(future)} later requests routed.\n")
    print("| routing of the later half | R@1 | R@5 | MRR |")
    print("|---|---|---|---|")
    for label, r1, r5, mrr in rows:
        print(f"| {label} | {r1:.3f} | {r5:.3f} | {mrr:.3f} |")


if __name__ == "__main__":
    main()
