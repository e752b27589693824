#!/usr/bin/env bash
# Runs every test of the workspace: unit, integration, UI (trybuild) and doc tests.
# Tests that need PostgreSQL read TOOLBELT_TEST_PG_URL and say "skipped" when it is unset.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --all-features "$@"
