#!/usr/bin/env bash
# The web console's browser test: builds the `toolbelt` binary, installs Debian's Chromium
# and playwright-core (scripts/setup-browser.sh), then drives the console in Chromium
# against the real server and a scripted model. Screenshots of the main pages are written
# to target/console-screenshots/ (test artifacts, not committed).
# Prints "skipped: ..." and exits 0 when no browser can be had here.
set -euo pipefail
cd "$(dirname "$0")/.."
setup=$(scripts/setup-browser.sh)
echo "$setup"
case "$setup" in skipped:*) exit 0 ;; esac
# The same feature set as the test build, so this reuses its binary instead of building another.
cargo build --workspace --all-features --bin toolbelt --quiet
target="${CARGO_TARGET_DIR:-$PWD/target}"
export TOOLBELT_BIN="$target/debug/toolbelt" ARTIFACTS="$target/console-screenshots"
node crates/toolbelt-console/tests/browser/console.test.mjs
