#!/usr/bin/env bash
# Installs what the console's browser tests need: Debian's Chromium (apt) and
# playwright-core (npm, pinned, driven with executablePath /usr/bin/chromium; no
# browser download). Prints "skipped: ..." and exits 0 when impossible here.
set -uo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) >/dev/null 2>&1 \
      || { echo "skipped: could not apt-get install chromium"; exit 0; }
  else
    echo "skipped: chromium is not installed and apt-get needs root"; exit 0
  fi
fi
dir=crates/toolbelt-console/tests/browser
if [ ! -d "$dir/node_modules/playwright-core" ]; then
  (cd "$dir" && npm ci --no-audit --no-fund --silent) || { echo "skipped: npm could not install playwright-core"; exit 0; }
fi
echo "browser ready: $(chromium --version 2>/dev/null)"
