#!/usr/bin/env bash
# Runs the property tests (proptest) for N minutes with many cases per run:
# text tool-call parsers, lenient JSON repair, schema normalisation ($ref bombs,
# deep nesting) and selection expressions.
#
#   scripts/fuzz.sh [MINUTES] [CASES_PER_RUN]      (defaults: 10 minutes, 20000 cases)
#
# Each round runs every property with a fresh random seed. A failure stops the
# script with proptest's minimal failing input; proptest also records it in
# `proptest-regressions/` next to the test file, and that file is replayed by
# every later `cargo test` (commit it, and add a named regression test).
# CI runs the same properties with the default 256 cases as part of cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
cases=${2:-20000}
deadline=$(( $(date +%s) + minutes * 60 ))
export PROPTEST_CASES=$cases
# Build once; the rounds only run.
cargo test -p toolbelt-llm -p toolbelt-core --test it --no-run
round=0
while [ "$(date +%s)" -lt "$deadline" ]; do
  round=$((round + 1))
  echo "== fuzz round $round ($cases cases per property)"
  cargo test -q -p toolbelt-llm --test it properties::
  cargo test -q -p toolbelt-core --test it properties::
done
echo "fuzz: $round rounds in $minutes minutes, no failure"
