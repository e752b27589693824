#!/usr/bin/env python3
"""Print the median of every criterion benchmark under target/criterion as a markdown table.

Usage: python3 bench/criterion-medians.py [FILTER]   (FILTER: substring of the benchmark id)
"""
import json
import os
import sys

root = os.environ.get("CARGO_TARGET_DIR", "target")
base = os.path.join(root, "criterion")
wanted = sys.argv[1] if len(sys.argv) > 1 else ""


def human(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


rows = []
for dirpath, _dirs, files in os.walk(base):
    if os.path.basename(dirpath) == "new" and "estimates.json" in files:
        with open(os.path.join(dirpath, "benchmark.json")) as f:
            bench_id = json.load(f)["full_id"]
        if wanted not in bench_id:
            continue
        with open(os.path.join(dirpath, "estimates.json")) as f:
            est = json.load(f)["median"]
        rows.append((bench_id, est["point_estimate"], est["confidence_interval"]))

print("| benchmark | median | 95% CI |")
print("|---|---|---|")
for bench_id, median, ci in sorted(rows):
    print(f"| `{bench_id}` | {human(median)} | {human(ci['lower_bound'])} – {human(ci['upper_bound'])} |")
