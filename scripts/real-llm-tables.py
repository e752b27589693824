#!/usr/bin/env python3
"""Merges the per-run lines that scripts/real-llm.sh prints on stderr (one file per invocation,
e.g. seed 1 from one run and seeds 2-3 from another) into its two tables: success per task and
per kind. A task's kind is read from the script's task list.

Usage: scripts/real-llm-tables.py RUN.err [RUN.err ...]
"""
import collections
import os
import re
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
kinds = {}
with open(os.path.join(here, "real-llm.sh"), encoding="utf-8") as f:
    for m in re.finditer(r'^\s*"([a-z-]+)~([a-z0-9-]+)~', f.read(), re.M):
        kinds[m.group(2)] = m.group(1)

runs = collections.OrderedDict()  # (task, seed) -> (passed, seconds); a later file wins
line = re.compile(r"^(\S+)\s+seed (\d+)\s+(PASS|FAIL)\s+([\d.]+)s")
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        for text in f:
            m = line.match(text)
            if m and m.group(1) in kinds:
                runs[(m.group(1), int(m.group(2)))] = (m.group(3) == "PASS", float(m.group(4)))
if not runs:
    sys.exit("no run lines found")

order = [t for t in kinds if any(k[0] == t for k in runs)]
print("| kind | task | passed | rate | median time |\n| --- | --- | --- | --- | --- |")
by_kind = collections.OrderedDict()
for task in order:
    mine = [v for k, v in runs.items() if k[0] == task]
    ok = sum(p for p, _ in mine)
    print(f"| {kinds[task]} | {task} | {ok}/{len(mine)} | {ok * 100 // len(mine)} % | "
          f"{statistics.median(t for _, t in mine):.1f} s |")
    agg = by_kind.setdefault(kinds[task], [0, 0])
    agg[0] += ok
    agg[1] += len(mine)
print("\n| kind | passed | rate |\n| --- | --- | --- |")
for kind, (ok, n) in by_kind.items():
    print(f"| {kind} | {ok}/{n} | {ok * 100 // n} % |")
ok = sum(v[0] for v in by_kind.values())
n = sum(v[1] for v in by_kind.values())
print(f"| **all** | **{ok}/{n}** | **{ok * 100 // n} %** |")
