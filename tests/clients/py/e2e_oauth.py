"""Calls `fixture_context` on `paddock serve --http` with the official MCP Python SDK client,
sending an OAuth access token as `Authorization: Bearer`, and prints whom the plugin was told it
serves.

Usage: e2e_oauth.py URL TOKEN MODE TRANSPORT
TRANSPORT is `http` (Streamable HTTP at URL/mcp) with MODE `legacy` or `2026-07-28`, or `sse`
(the 2024-11-05 HTTP+SSE pair at URL/sse) with MODE `legacy`. Prints one JSON line
`{"caller": ..., "protocol_version": ...}`; exits non-zero on a failure.
"""

import asyncio
import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

WAIT = 10


async def main(url: str, token: str, mode: str, transport: str) -> None:
    base = url.rstrip("/")
    headers = {"Authorization": f"Bearer {token}"}
    http = None
    if transport == "http":
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(WAIT, read=300))
        server = streamable_http_client(f"{base}/mcp", http_client=http)
    elif transport == "sse" and mode == "legacy":
        server = sse_client(f"{base}/sse", headers=headers, timeout=WAIT)
    else:
        raise SystemExit(f"unknown transport or mode {transport!r} {mode!r}\n{__doc__}")
    with anyio.fail_after(WAIT * 3):
        async with Client(server, mode=mode, read_timeout_seconds=WAIT) as client:
            result = await client.call_tool("fixture_context", {})
            if result.is_error:
                raise SystemExit(f"fixture_context failed: {result}")
            seen = json.loads(result.content[0].text)
            version = client.protocol_version
    if http is not None:
        await http.aclose()
    print(json.dumps({"caller": seen.get("caller"), "protocol_version": version}))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    asyncio.run(main(*sys.argv[1:]))
