#!/usr/bin/env bash
# Architecture invariant: which crates may depend on which.
#
# - toolbelt-core knows nothing of HTTP, databases or MCP, nor of any other toolbelt crate;
# - router, llm and tools do not depend on each other; the agent runtime does not
#   depend on the built-in tools, a database, a web server or MCP;
# - every crate of the workspace must have a rule here: a new crate without one fails
#   the check (add a `rule` line saying what it must not depend on).
#
# A failing `cargo tree` (or `cargo metadata`) fails the check; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A RULES=(
  [toolbelt-core]='reqwest|sqlx|axum|rmcp|hyper|toolbelt-[a-z]+'
  [toolbelt-macros]='toolbelt-[a-z]+'
  [toolbelt-testkit]='sqlx|axum|rmcp|toolbelt-router|toolbelt-llm|toolbelt-agent|toolbelt-tools|toolbelt'
  [toolbelt-router]='sqlx|axum|rmcp|toolbelt-llm|toolbelt-agent|toolbelt-tools|toolbelt'
  [toolbelt-llm]='sqlx|axum|rmcp|toolbelt-router|toolbelt-agent|toolbelt-tools|toolbelt'
  [toolbelt-tools]='sqlx|axum|rmcp|toolbelt-router|toolbelt-llm|toolbelt-agent|toolbelt'
  [toolbelt-agent]='sqlx|axum|rmcp|toolbelt-tools|toolbelt'
  # Memory and routine types and traits, shared by the tools and the store (ADR 0020).
  [toolbelt-persist]='reqwest|sqlx|axum|rmcp|hyper|toolbelt-router|toolbelt-llm|toolbelt-agent|toolbelt-tools|toolbelt-store|toolbelt-macros|toolbelt'
  # The store knows no HTTP client or server, no MCP, no LLM and no built-in tool.
  [toolbelt-store]='reqwest|axum|rmcp|toolbelt-router|toolbelt-llm|toolbelt-agent|toolbelt-tools|toolbelt-mcp|toolbelt-server|toolbelt'
  [toolbelt-mcp]='sqlx|toolbelt-router|toolbelt-llm|toolbelt-agent|toolbelt-tools|toolbelt-store|toolbelt-server|toolbelt'
  # Model code for the router: no toolbelt crate, no HTTP, no storage (ADR 0033).
  [toolbelt-embed]='reqwest|sqlx|axum|rmcp|hyper|toolbelt-[a-z]+'
  # Static console assets and the router serving them: no toolbelt crate, no storage (ADR 0036).
  [toolbelt-console]='reqwest|sqlx|rmcp|toolbelt-[a-z]+'
  # The host turns stored records into running things: no HTTP server, no front-end. It
  # supervises stored MCP servers through toolbelt-mcp's client side, which pulls no axum.
  [toolbelt-host]='axum|toolbelt-server|toolbelt-console|toolbelt'
  # OpenAPI documents to stored HTTP tools: the tools' definitions and the store, no server,
  # no MCP, no model; it fetches nothing (the CLI reads a document by URL) (ADR 0054).
  [toolbelt-openapi]='axum|rmcp|toolbelt-router|toolbelt-llm|toolbelt-agent|toolbelt-mcp|toolbelt-host|toolbelt-server|toolbelt-console|toolbelt'
  [toolbelt-server]='toolbelt'
  # The binary sits on top of everything.
  [toolbelt]='^$'
)

members=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json, sys; print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"]))')
[ -n "$members" ] || { echo "check-arrows: cargo metadata listed no crates" >&2; exit 1; }

fail=0
checked=0
for crate in $members; do
  pattern=${RULES[$crate]-}
  if [ -z "$pattern" ]; then
    echo "arrow rule missing: crate $crate has no rule in scripts/check-arrows.sh"; fail=1; continue
  fi
  # No `|| true` and no 2>/dev/null: a cargo tree failure ends the script with its error.
  tree=$(cargo tree -p "$crate" -e normal --prefix none --no-dedupe)
  hits=$(printf '%s\n' "$tree" | tail -n +2 | grep -E "^($pattern) v" | sort -u || true)
  if [ -n "$hits" ]; then
    echo "arrow violated: $crate depends on:"; echo "$hits"; fail=1
  fi
  checked=$((checked + 1))
done
# Direct dependencies only: the server reaches the database through the host and the store,
# so sqlx is in its tree, but the server itself names no SQL type.
declare -A DIRECT=(
  [toolbelt-server]='sqlx'
)
for crate in "${!DIRECT[@]}"; do
  direct=$(cargo tree -p "$crate" -e normal --prefix none --depth 1)
  hits=$(printf '%s\n' "$direct" | tail -n +2 | grep -E "^(${DIRECT[$crate]}) v" | sort -u || true)
  if [ -n "$hits" ]; then
    echo "arrow violated: $crate depends directly on:"; echo "$hits"; fail=1
  fi
done
[ $fail -eq 0 ] && echo "arrows ok ($checked crates; direct rules for ${#DIRECT[@]})"
exit $fail
