#!/usr/bin/env python3
"""Measures the LLM tier (`toolbelt route --llm-rerank N`) against the hybrid ranking it reranks.

Usage (from the repository root, with a model server running, e.g. the real 1.5B model of
../shared/real-llm: `url=$(../shared/real-llm/serve.sh 1.5b text)`):

    OPENAI_BASE_URL=$url OPENAI_API_KEY=x TOOLBELT_MODEL=qwen2.5-coder-1.5b-instruct \
        python3 eval/rerank.py --bin target/release/toolbelt --set nestful --split test --top-n 10

For each set it writes the split's queries to a temporary file, ranks them with the default
hybrid router (`--router hybrid`, models from target/models as shipped; our keyword groups on
our own set only, as eval/run.py does), then with the same router under `--llm-rerank N`, and
prints one markdown row each: recall@1/3/5, all-needed-in-top-5, MRR, and for the tier the
seconds per request (median and 90th percentile of the model call, from the `rerank.ms` of
each line) and how many answers the tier could not use. With the tier, batch mode asks
about one query at a time, so each call's time is its own. Stdlib only; the metrics are
eval/run.py's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (eval/run.py: sets, catalogs and metrics)


def ranked(bin_path, catalog, queries, extra, k):
    cmd = [bin_path, "route", "--catalog", catalog, "--queries", queries, "--top-k", str(k),
           "--format", "jsonl", "--router", "hybrid"] + extra
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=run.ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.strip()]
    return lines, time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=run.BIN)
    ap.add_argument("--set", action="append", choices=sorted(run.SETS), help="repeatable; default nestful and livemcpbench")
    ap.add_argument("--split", default="test", choices=["dev", "test", "all"])
    ap.add_argument("--top-n", type=int, default=10)
    ap.add_argument("--limit", type=int, default=0, help="only the first N queries of the split (0: all)")
    args = ap.parse_args()
    for var in ("OPENAI_BASE_URL", "TOOLBELT_MODEL"):
        if not os.environ.get(var):
            sys.exit(f"set {var} (and OPENAI_API_KEY) to the model that reranks")
    sets = args.set or ["nestful", "livemcpbench"]
    k = max(10, args.top_n)
    print(f"Model {os.environ['TOOLBELT_MODEL']} at {os.environ['OPENAI_BASE_URL']}; top {args.top_n} reranked; "
          f"split {args.split}.\n")
    print("| set | router | n | R@1 | R@3 | R@5 | all@5 | MRR | s/request (median / p90) | unusable answers |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in sets:
        catalog_path, queries_path = run.SETS[name]
        if not os.path.isfile(queries_path):
            sys.exit(f"{queries_path} is missing: run python3 eval/external.py first")
        catalog = run.catalog_tools(catalog_path)
        tokens = {t["name"]: run.schema_tokens(t) for t in catalog}
        family = {t["name"]: t["family"] for t in catalog}
        total = sum(tokens.values())
        queries = [q for q in run.load_jsonl(queries_path) if args.split == "all" or q["split"] == args.split]
        if args.limit:
            queries = queries[:args.limit]
        groups = ["--groups", "eval/groups.json"] if name == "ours" else []
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "queries.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                for q in queries:
                    f.write(json.dumps(q, ensure_ascii=False) + "\n")
            base, _ = ranked(args.bin, catalog_path, path, groups, k)
            tier, elapsed = ranked(args.bin, catalog_path, path, groups + ["--llm-rerank", str(args.top_n)], k)
        rows = [("hybrid (default)", base, None), (f"hybrid + llm rerank top {args.top_n}", tier, elapsed)]
        for label, lines, elapsed in rows:
            ranking = {l["id"]: l["tools"] for l in lines}
            m = run.metrics(queries, ranking, ranking, tokens, total, family)
            seconds = failures = "—"
            if elapsed is not None:
                ms = sorted(l["rerank"]["ms"] for l in lines if "rerank" in l)
                if ms:
                    p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
                    seconds = f"{statistics.median(ms) / 1000:.1f} / {p90 / 1000:.1f}"
                failures = str(sum(1 for l in lines if l.get("rerank", {}).get("failure")))
            print(f"| {name} | {label} | {len(queries)} | {m['R@1']:.3f} | {m['R@3']:.3f} | {m['R@5']:.3f} "
                  f"| {m['all@5']:.3f} | {m['MRR']:.3f} | {seconds} | {failures} |", flush=True)
        for l in tier:
            if l.get("rerank", {}).get("failure"):
                print(f"  {name} {l['id']}: {l['rerank']['failure'][:160]}", file=sys.stderr)


if __name__ == "__main__":
    main()
