#!/usr/bin/env bash
# Installs openapi-python-client (pinned) from PyPI into a virtualenv, target/python-client/venv.
# crates/toolbelt/tests/it/python_client.rs generates a Python client from the live server's
# /api/v1/openapi.json with it and drives an agent run through that client only; the test
# prints "skipped: …" when the venv is absent. Safe to run again: it skips what is installed.
# When PyPI cannot be reached it prints "skipped: …" and exits 1 (scripts/test.sh warns and goes on).
set -euo pipefail
cd "$(dirname "$0")/.."
OPC_VERSION=0.29.1
DIR="${TOOLBELT_PYTHON_CLIENT:-target/python-client}"
mkdir -p "$DIR"

if ! command -v python3 >/dev/null; then
  echo "skipped: python3 not found; the generated Python client test will be skipped" >&2
  exit 1
fi
if [ ! -x "$DIR/venv/bin/python" ]; then
  python3 -m venv "$DIR/venv"
fi
if ! "$DIR/venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('openapi-python-client') != '$OPC_VERSION')" 2>/dev/null; then
  if ! "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "openapi-python-client==$OPC_VERSION"; then
    echo "skipped: could not install openapi-python-client $OPC_VERSION from PyPI" >&2
    exit 1
  fi
fi
echo "openapi-python-client $OPC_VERSION ready in $DIR/venv"
