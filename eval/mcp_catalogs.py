#!/usr/bin/env python3
"""Fetches the tool lists of real MCP servers from npm, for the catalog loader's tests.

Usage (from the repository root; needs node and npm):
    python3 eval/mcp_catalogs.py

Installs pinned reference servers (@modelcontextprotocol/server-everything, -filesystem,
-memory, -sequential-thinking) into target/eval/mcp/, starts each over stdio, sends
`initialize` and `tools/list`, and writes the raw JSON-RPC response to
target/eval/mcp/<server>.tools.json, exactly as the server sent it. The router's test
`catalog::real_mcp_tool_lists_load` loads every such file (and says `skipped: …` when
there is none). Stdlib only.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.path.join(ROOT, "target", "eval", "mcp")
VERSION = "2026.8.31"
SERVERS = {
    "everything": ("@modelcontextprotocol/server-everything", ["stdio"]),
    "filesystem": ("@modelcontextprotocol/server-filesystem", ["{tmp}"]),
    "memory": ("@modelcontextprotocol/server-memory", []),
    "sequential-thinking": ("@modelcontextprotocol/server-sequential-thinking", []),
}


def install():
    missing = [pkg for pkg, _ in SERVERS.values()
               if not os.path.isfile(os.path.join(DIR, "node_modules", pkg, "package.json"))]
    if not missing:
        return
    if not shutil.which("npm"):
        sys.exit("skipped: npm is not installed")
    os.makedirs(DIR, exist_ok=True)
    cmd = ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", DIR] + \
          [f"{pkg}@{VERSION}" for pkg, _ in SERVERS.values()]
    if subprocess.run(cmd, check=False).returncode != 0:
        sys.exit("skipped: npm install failed")


def tools_list(pkg, args, tmp):
    meta = json.load(open(os.path.join(DIR, "node_modules", pkg, "package.json")))
    bin_path = meta["bin"] if isinstance(meta["bin"], str) else next(iter(meta["bin"].values()))
    cmd = ["node", os.path.join(DIR, "node_modules", pkg, bin_path)] + [a.format(tmp=tmp) for a in args]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        def send(msg):
            proc.stdin.write(json.dumps(msg) + "\n")
            proc.stdin.flush()

        def answer(want_id):
            for line in proc.stdout:
                msg = json.loads(line)
                if msg.get("id") == want_id:
                    return msg
            raise RuntimeError(f"{pkg} closed its output")

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "toolbelt-eval", "version": "0"}}})
        answer(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        return answer(2)
    finally:
        proc.kill()
        proc.wait()


def main():
    install()
    with tempfile.TemporaryDirectory() as tmp:
        for name, (pkg, args) in SERVERS.items():
            response = tools_list(pkg, args, tmp)
            path = os.path.join(DIR, f"{name}.tools.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(response, f, ensure_ascii=False, indent=1)
            print(f"{name}: {len(response['result']['tools'])} tools -> {path}")


if __name__ == "__main__":
    main()
