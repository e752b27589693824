#!/usr/bin/env python3
"""Breakdowns of the routing evaluation that eval/run.py does not print (issue 12, items 2, 4, 8).

Usage (from the repository root; `--bin` is a built CLI, e.g. a copy of target/debug/toolbelt):
    python3 eval/breakdowns.py zh        --bin /tmp/tb-eval   # LiveMCPBench: English vs our Chinese translations
    python3 eval/breakdowns.py neardup   --bin /tmp/tb-eval   # queries whose needed tools have a near-duplicate vs the rest
    python3 eval/breakdowns.py multiturn --bin /tmp/tb-eval   # conversations: with earlier turns vs the latest turn only

`zh` and `neardup` on LiveMCPBench need `python3 eval/external.py` first.

- zh: routes LiveMCPBench's tasks and our Chinese translations of them
  (eval/livemcpbench_zh.jsonl) over the same catalog, same needed tools, and
  prints R@5 / famR@5 / MRR side by side per split, and how often the first
  tool is one of the tools described in Chinese.
- neardup: a needed tool "has a near-duplicate" when another tool of the same
  catalog has a TF-IDF cosine of at least 0.5 with it (name words plus
  description; lowercase ASCII words and CJK character bigrams, English stop
  words dropped, idf over that catalog). Prints R@1 / R@5 / MRR for queries with
  at least one such needed tool vs the rest, and how often a wrong top-1 is a
  near-duplicate of a needed tool; 0.4 and 0.6 are printed on all queries too.
- multiturn: (a) "derived": each query of eval/queries.jsonl preceded by 1 or
  2 other queries of the same language as earlier user turns (random.Random(12);
  an assistant "Done." between turns); (b) "hand-written": eval/multiturn.jsonl.
  Each conversation is routed whole (earlier user turns as context), with only
  its latest user turn, and, as a diagnostic, with all its user turns joined
  into one input.

Stdlib only; nothing here changes a router's settings.
"""
import argparse
import hashlib
import json
import math
import os
import random
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import learn  # noqa: E402
import run  # noqa: E402

LIVE = "livemcpbench"
CACHE = os.path.join(run.TARGET, "eval", ".rankings")
STOP = set("a an the of to in on for and or with by from is are be as at this that it its into".split())


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def score(queries, ranked):
    """R@1, R@5 and MRR over the queries (learn.py's scorer)."""
    n = len(queries)
    r1, r5, mrr = learn.score(queries, ranked) if n else (0, 0, 0)
    return {"n": n, "R@1": r1, "R@5": r5, "MRR": mrr}


def fam_r5(queries, ranked, family):
    total = 0.0
    for q in queries:
        top = {family.get(t) for t in ranked[q["id"]][:5]}
        total += sum(family.get(t) in top for t in q["needed"]) / len(q["needed"])
    return total / len(queries) if queries else 0


def splits_of(queries):
    return [("dev", [q for q in queries if q["split"] == "dev"]),
            ("test", [q for q in queries if q["split"] == "test"]),
            ("all", queries)]


def route(name, catalog_path, queries, tmp, tag):
    if name in ("hybrid", "hybrid (no groups)") and not os.path.isfile(os.path.join(run.USE_DIR, "weights.npz")):
        # The default finds USE by itself; without it the row would silently be lexical only.
        sys.exit(f"{name} is the default only with USE at {run.USE_DIR}: run scripts/fetch-model.sh")
    path = os.path.join(tmp, f"{tag}.jsonl")
    write_jsonl(path, queries)
    # The same router, binary, catalog and queries give the same ranking: keep it, since a
    # debug build embeds queries slowly and the breakdowns route some sets twice.
    st = os.stat(run.BIN)
    key = hashlib.sha1(json.dumps([run.BIN, st.st_size, st.st_mtime, name, run.ROUTERS[name], run.HYBRID_EXTRA,
                                   open(catalog_path, "rb").read().decode("utf-8"),
                                   open(path, encoding="utf-8").read()]).encode()).hexdigest()[:16]
    cached = os.path.join(CACHE, f"{key}.json")
    if os.path.isfile(cached):
        with open(cached, encoding="utf-8") as f:
            return json.load(f)
    ranked = run.rankings(name, catalog_path, path, k=50)
    if ranked is None:
        sys.exit(f"cannot run {name}")
    os.makedirs(CACHE, exist_ok=True)
    with open(cached, "w", encoding="utf-8") as f:
        json.dump(ranked, f)
    return ranked


# --- zh ---------------------------------------------------------------------

def cmd_zh(args):
    catalog_path, queries_path = run.SETS[LIVE]
    if not os.path.isfile(queries_path):
        sys.exit(f"{queries_path} is missing: run python3 eval/external.py first")
    family = {t["name"]: t["family"] for t in run.catalog_tools(catalog_path)}
    en = run.load_jsonl(queries_path)
    zh = run.livemcpbench_queries_zh(en)
    missing = len(en) - len(zh)
    if missing:
        print(f"warning: {missing} tasks have no translation; compared on the {len(zh)} that do", file=sys.stderr)
    ids = {q["id"] for q in zh}
    en = [q for q in en if q["id"] in ids]
    routers = run.split_routers(args.routers) if args.routers else [
        "hybrid (no groups)", "hybrid (no groups, lexical only)", "bm25-plain", "multilingual"]
    print(f"LiveMCPBench, {len(en)} tasks, English vs our Chinese translation (same catalog, same needed tools).\n")
    print("| router | split | n | R@5 en | R@5 zh | zh − en | famR@5 en | famR@5 zh | MRR en | MRR zh |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    # Tools whose description has Chinese in it (some servers describe their tools in Chinese).
    cjk = {t["name"] for t in run.catalog_tools(catalog_path) if re.search(r"[\u4e00-\u9fff]", t["description"])}
    pulled = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in routers:
            ren = route(name, catalog_path, en, tmp, "en")
            rzh = route(name, catalog_path, zh, tmp, "zh")
            for split, qs in splits_of(en):
                qz = [q for q in zh if q["split"] == split] if split != "all" else zh
                a, b = score(qs, ren), score(qz, rzh)
                print(f"| {name} | {split} | {a['n']} | {a['R@5']:.3f} | {b['R@5']:.3f} | {b['R@5'] - a['R@5']:+.3f} "
                      f"| {fam_r5(qs, ren, family):.3f} | {fam_r5(qz, rzh, family):.3f} | {a['MRR']:.3f} | {b['MRR']:.3f} |")
            first = [sum(bool(r[q["id"]]) and r[q["id"]][0] in cjk for q in qs) for r, qs in ((ren, en), (rzh, zh))]
            top5 = [sum(len(set(r[q["id"]][:5]) & cjk) for q in qs) / (5 * len(qs)) for r, qs in ((ren, en), (rzh, zh))]
            pulled.append((name, first, top5))
    needing = sum(bool(set(q["needed"]) & cjk) for q in en)
    print(f"\n{len(cjk)} of the catalog's tools are described in Chinese; {needing} of the {len(en)} tasks need one.\n")
    print("| router | first tool described in Chinese, en | zh | share of the top 5, en | zh |")
    print("|---|---|---|---|---|")
    for name, first, top5 in pulled:
        print(f"| {name} | {first[0]} | {first[1]} | {top5[0]:.3f} | {top5[1]:.3f} |")


# --- neardup ----------------------------------------------------------------

def tokens(text):
    out = []
    for m in re.finditer(r"[a-z0-9]+|[\u4e00-\u9fff]+", text.lower()):
        w = m.group()
        if "\u4e00" <= w[0] <= "\u9fff":
            out += [w[i:i + 2] for i in range(len(w) - 1)] or [w]
        elif w not in STOP:
            out.append(w)
    return out


def best_neighbour(catalog):
    """tool name -> (cosine, name) of its most similar other tool, TF-IDF over name words + description."""
    docs = {}
    for t in catalog:
        name_words = re.sub(r"([a-z])([A-Z])", r"\1 \2", t["name"]).replace("_", " ").replace("-", " ")
        docs[t["name"]] = tokens(name_words + " " + t["description"])
    df = {}
    for d in docs.values():
        for w in set(d):
            df[w] = df.get(w, 0) + 1
    n = len(docs)
    vec = {}
    for name, d in docs.items():
        tf = {}
        for w in d:
            tf[w] = tf.get(w, 0) + 1
        v = {w: c * math.log(n / df[w]) for w, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        vec[name] = {w: x / norm for w, x in v.items()}
    best = {}
    names = list(vec)
    for a in names:
        va = vec[a]
        best[a] = max(((sum(va.get(w, 0.0) * x for w, x in vec[b].items()), b) for b in names if b != a),
                      default=(0.0, None))
    return best, vec


def cosine(vec, a, b):
    va, vb = vec.get(a, {}), vec.get(b, {})
    return sum(va.get(w, 0.0) * x for w, x in vb.items())


def cmd_neardup(args):
    sets = [("ours", ["hybrid", "hybrid (lexical only)"]),
            (LIVE, ["hybrid (no groups)", "hybrid (no groups, lexical only)"])]
    if args.set:
        sets = [s for s in sets if s[0] == args.set]
    print("| set | router | split | near-dup threshold | n with | R@1 | R@5 | MRR | wrong top-1s that are a near-dup of a needed tool "
          "| n rest | R@1 | R@5 | MRR |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for set_name, routers in sets:
            catalog_path, queries_path = run.SETS[set_name]
            if not os.path.isfile(queries_path):
                sys.exit(f"{queries_path} is missing: run python3 eval/external.py first")
            catalog = run.catalog_tools(catalog_path)
            best, vec = best_neighbour(catalog)
            queries = run.load_jsonl(queries_path)
            share = {th: sum(best[t][0] >= th for t in best) / len(best) for th in (0.4, 0.5, 0.6)}
            print(f"<!-- {set_name}: tools with a near-duplicate at 0.4/0.5/0.6: "
                  f"{share[0.4]:.0%}/{share[0.5]:.0%}/{share[0.6]:.0%} of {len(best)} -->", file=sys.stderr)
            for name in routers:
                ranked = route(name, catalog_path, queries, tmp, "q")
                cases = [(split, qs, 0.5) for split, qs in splits_of(queries)] + [("all", queries, 0.4), ("all", queries, 0.6)]
                for split, qs, th in cases:
                    with_dup = [q for q in qs if any(best.get(t, (0, None))[0] >= th for t in q["needed"])]
                    rest = [q for q in qs if q not in with_dup]
                    a, b = score(with_dup, ranked), score(rest, ranked)
                    # A wrong first tool that is a near-duplicate (same threshold) of some needed tool.
                    confused = wrong = 0
                    for q in with_dup:
                        top = ranked[q["id"]][:1]
                        if top and top[0] not in q["needed"]:
                            wrong += 1
                            confused += any(cosine(vec, top[0], t) >= th for t in q["needed"])
                    conf = f"{confused} of {wrong}" if a["n"] else "—"
                    print(f"| {set_name} | {name} | {split} | {th} | {a['n']} | {a['R@1']:.3f} | {a['R@5']:.3f} | {a['MRR']:.3f} "
                          f"| {conf} | {b['n']} | {b['R@1']:.3f} | {b['R@5']:.3f} | {b['MRR']:.3f} |")


# --- multiturn --------------------------------------------------------------

def derived_conversations(queries, seed=12):
    rng = random.Random(seed)
    by_lang = {}
    for q in queries:
        by_lang.setdefault(q["lang"], []).append(q)
    out = []
    for q in queries:
        others = [o for o in by_lang[q["lang"]] if o["id"] != q["id"]]
        earlier = rng.sample(others, rng.choice([1, 2]))
        done = "好的，已完成。" if q["lang"] == "zh" else "Done."
        msgs = []
        for o in earlier:
            msgs += [{"role": "user", "content": o["query"]}, {"role": "assistant", "content": done}]
        msgs.append({"role": "user", "content": q["query"]})
        out.append({**q, "query": msgs})
    return out


def latest_only(conversations):
    return [{**c, "query": [m for m in c["query"] if m["role"] == "user"][-1]["content"]} for c in conversations]


def joined(conversations):
    """Every user turn joined into one input (a diagnostic: not how the router takes a conversation)."""
    return [{**c, "query": "\n".join(m["content"] for m in c["query"] if m["role"] == "user")} for c in conversations]


def cmd_multiturn(args):
    catalog_path = run.SETS["ours"][0]
    derived = derived_conversations(run.load_jsonl(run.SETS["ours"][1]))
    hand = run.load_jsonl(os.path.join(run.EVAL, "multiturn.jsonl"))
    routers = run.split_routers(args.routers) if args.routers else ["hybrid"]
    print("| set | router | split | n | R@5 with earlier turns | R@5 latest turn only | R@5 user turns joined "
          "| MRR with | MRR latest only | MRR joined |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for set_name, convs in (("derived (ours + 1–2 unrelated earlier turns)", derived),
                                ("hand-written, elliptical (eval/multiturn.jsonl)", hand)):
            for name in routers:
                with_ctx = route(name, catalog_path, convs, tmp, "with")
                alone = route(name, catalog_path, latest_only(convs), tmp, "alone")
                glued = route(name, catalog_path, joined(convs), tmp, "joined")
                groups = splits_of(convs)
                if convs is hand:
                    groups += [(f"all, {lang}", [c for c in convs if c["lang"] == lang]) for lang in ("en", "zh")]
                for split, qs in groups:
                    a, b, j = score(qs, with_ctx), score(qs, alone), score(qs, glued)
                    print(f"| {set_name} | {name} | {split} | {a['n']} | {a['R@5']:.3f} | {b['R@5']:.3f} | {j['R@5']:.3f} "
                          f"| {a['MRR']:.3f} | {b['MRR']:.3f} | {j['MRR']:.3f} |")
            if args.dump and convs is hand:
                for c in convs:
                    print(c["id"], c["needed"], "ctx:", with_ctx[c["id"]][:5], "alone:", alone[c["id"]][:5],
                          "joined:", glued[c["id"]][:5], file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["zh", "neardup", "multiturn"])
    ap.add_argument("--bin", required=True, help="the toolbelt binary to run")
    ap.add_argument("--routers", default="", help="rows of eval/run.py, comma-separated (default: per breakdown)")
    ap.add_argument("--set", default="", help="neardup: only this set (ours or livemcpbench)")
    ap.add_argument("--dump", action="store_true", help="multiturn: print each hand-written conversation's top 5 to stderr")
    args = ap.parse_args()
    run.BIN = os.path.abspath(args.bin)
    {"zh": cmd_zh, "neardup": cmd_neardup, "multiturn": cmd_multiturn}[args.what](args)


if __name__ == "__main__":
    main()
