#!/usr/bin/env bash
# Installs the real MCP peers the toolbelt-mcp tests talk to, into target/mcp-peers/:
#   - npm: the reference servers @modelcontextprotocol/server-everything and server-filesystem;
#   - PyPI: the official Python `mcp` SDK (its client), in a virtualenv.
# Versions are pinned. Tests find the peers through target/mcp-peers/ (or TOOLBELT_MCP_PEERS)
# and print "skipped: …" when one is missing. Safe to run again: it skips what is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
EVERYTHING_VERSION=2026.8.31
FILESYSTEM_VERSION=2026.8.31
PY_MCP_VERSION=2.3.0
DIR="${TOOLBELT_MCP_PEERS:-target/mcp-peers}"
mkdir -p "$DIR"

if command -v npm >/dev/null; then
  if [ ! -f "$DIR/node_modules/@modelcontextprotocol/server-everything/package.json" ] ||
     ! grep -q "\"version\": \"$EVERYTHING_VERSION\"" "$DIR/node_modules/@modelcontextprotocol/server-everything/package.json" ||
     ! grep -q "\"version\": \"$FILESYSTEM_VERSION\"" "$DIR/node_modules/@modelcontextprotocol/server-filesystem/package.json" 2>/dev/null; then
    npm install --silent --no-audit --no-fund --prefix "$DIR" \
      "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
      "@modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION"
  fi
else
  echo "warning: npm not found; the MCP client tests against the reference servers will be skipped" >&2
fi

if command -v python3 >/dev/null; then
  if [ ! -x "$DIR/venv/bin/python" ]; then
    python3 -m venv "$DIR/venv"
  fi
  if ! "$DIR/venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$PY_MCP_VERSION')" 2>/dev/null; then
    "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$PY_MCP_VERSION"
  fi
else
  echo "warning: python3 not found; the MCP server tests with the Python SDK client will be skipped" >&2
fi
echo "MCP peers ready in $DIR"
