#!/usr/bin/env bash
# MCP figures for docs/PERFORMANCE.md:
#   1. load: concurrent clients calling a no-op tool through toolbelt's MCP server
#      over streamable HTTP on loopback (calls/s, p50, p99);
#   2. criterion: import path vs a direct rmcp call, and importing a 500-tool server.
# Usage: bench/mcp.sh [CLIENTS] [SECONDS]   (defaults 8 and 5)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -p toolbelt-mcp --bench mcp_load -- "${1:-8}" "${2:-5}"
cargo bench -p toolbelt-mcp --bench mcp -- --warm-up-time 1 --measurement-time 3
python3 bench/criterion-medians.py mcp_
