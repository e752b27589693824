"""A scripted MCP client on the official Python SDK, for toolbelt's server tests.

Usage: py_client.py MODE ELICIT (URL | stdio COMMAND ARGS...)
  MODE    `legacy` (initialize handshake) or `auto` (what the SDK negotiates by default)
  ELICIT  `accept`, `decline` or `none` (no elicitation support advertised)
Reads a JSON list of [tool, arguments] calls on stdin; prints one JSON object:
{"protocol": ..., "tools": [{name, annotations}...], "results": [CallToolResult...],
 "tools_after": [names listed after the calls]}.
"""

import asyncio
import json
import sys

import mcp_types as types
from mcp import Client, StdioServerParameters


async def main() -> None:
    mode, elicit, target = sys.argv[1], sys.argv[2], sys.argv[3]
    server = StdioServerParameters(command=sys.argv[4], args=sys.argv[5:]) if target == "stdio" else target
    calls = json.loads(sys.stdin.read() or "[]")

    async def on_elicit(context, params):
        if elicit == "accept":
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    kwargs = {"mode": mode}
    if elicit != "none":
        kwargs["elicitation_callback"] = on_elicit
    async with Client(server, **kwargs) as client:
        listed = await client.list_tools()
        out = {
            "protocol": client.protocol_version,
            "tools": [
                {"name": t.name, "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True) if t.annotations else None}
                for t in listed.tools
            ],
            "results": [],
        }
        for name, args in calls:
            result = await client.call_tool(name, args)
            out["results"].append(result.model_dump(mode="json", by_alias=True, exclude_none=True))
        out["tools_after"] = [t.name for t in (await client.list_tools()).tools]
    print(json.dumps(out))


asyncio.run(main())
