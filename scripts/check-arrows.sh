#!/usr/bin/env bash
# Architecture invariant: toolbelt-core knows nothing of HTTP, databases or MCP,
# and the router, llm and tools crates do not depend on each other.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
forbid() { # crate, pattern of forbidden dependencies
  local crate=$1 pattern=$2 hits
  hits=$(cargo tree -p "$crate" -e normal --prefix none --no-dedupe 2>/dev/null | tail -n +2 | grep -E "^($pattern) v" | sort -u || true)
  if [ -n "$hits" ]; then
    echo "arrow violated: $crate depends on:"; echo "$hits"; fail=1
  fi
}
forbid toolbelt-core 'reqwest|sqlx|axum|rmcp|hyper|toolbelt-[a-z]+'
forbid toolbelt-macros 'toolbelt-[a-z]+'
forbid toolbelt-router 'sqlx|axum|rmcp|toolbelt-llm|toolbelt-agent|toolbelt-tools'
forbid toolbelt-llm 'sqlx|axum|rmcp|toolbelt-router|toolbelt-agent|toolbelt-tools'
forbid toolbelt-tools 'sqlx|axum|rmcp|toolbelt-router|toolbelt-llm|toolbelt-agent'
forbid toolbelt-mcp 'sqlx|toolbelt-router|toolbelt-llm|toolbelt-agent|toolbelt-tools|toolbelt-store|toolbelt-server'
[ $fail -eq 0 ] && echo "arrows ok"
exit $fail
