#!/usr/bin/env bash
# The main job, for now: build the `toolbelt` CLI, list the built-in tools by
# group, call two of them inside a scratch workspace, and route a few requests
# in English and Chinese. (It grows into starting the server in later releases.)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p toolbelt --quiet
tb=target/release/toolbelt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'hello from toolbelt\nsecond line\n' > "$work/notes.txt"

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

say toolbelt tools list
"$tb" tools list

say toolbelt tools call list_dir '{"path": "."}' --root "$work"
"$tb" tools call list_dir '{"path": "."}' --root "$work"

say toolbelt tools call file_read '{"path": "notes.txt"}' --root "$work"
"$tb" tools call file_read '{"path": "notes.txt"}' --root "$work"

say "toolbelt tools call file_read '{\"path\": 3}'   # a validation error, on purpose"
"$tb" tools call file_read '{"path": 3}' --root "$work" || true

for q in "read the README and fix the typo in it" "今天的天气怎么样" "启动一个每分钟的定时任务" "你好"; do
  say toolbelt route "$q"
  "$tb" route "$q"
done
