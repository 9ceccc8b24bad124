"""A plugin dropped into a served folder, then removed, as the official MCP Python SDK client
meets it, over stdio or Streamable HTTP, in either era.

Usage: e2e_live.py TARGET PLUGINS_DIR MODE NEW_PLUGIN
TARGET is `stdio:PADDOCK_BIN` (the client starts `paddock serve PLUGINS_DIR`) or `http:URL` (a
server already serving PLUGINS_DIR). MODE is `legacy` (list changes arrive as session
notifications) or `2026-07-28` (on a `subscriptions/listen` stream). NEW_PLUGIN is a `.wasm`
file whose plugin exposes `version`; it is copied into the folder as `v.wasm` (written beside
it, then renamed in), and later removed. Prints one JSON line; exits non-zero on a mismatch.
"""

import asyncio
import json
import os
import shutil
import sys
import time

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import ToolsListChanged

WAIT = 10
# The product's promise: a dropped plugin is announced and answers within this long.
PROMISED = 2.0


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"e2e check failed: {what}")


def drop_in(plugins: str, source: str) -> None:
    part = os.path.join(plugins, ".v.wasm.part")
    shutil.copyfile(source, part)
    os.rename(part, os.path.join(plugins, "v.wasm"))


async def main(target: str, plugins: str, mode: str, new_plugin: str) -> None:
    changed = anyio.Event()
    heard: list[str] = []

    async def on_message(message) -> None:
        # At 2026-07-28 the listen stream's events are what counts (they also pass through here).
        if mode == "legacy" and getattr(message, "method", None) == "notifications/tools/list_changed":
            heard.append("tools_list_changed")
            changed.set()

    kind, _, where = target.partition(":")
    if kind == "stdio":
        server = StdioServerParameters(command=where, args=["serve", plugins], env={"RUST_LOG": "warn"})
    else:
        server = streamable_http_client(f"{where.rstrip('/')}/mcp", http_client=httpx2.AsyncClient(timeout=httpx2.Timeout(WAIT, read=300)))

    async def next_change(sub) -> None:
        nonlocal changed
        with anyio.fail_after(WAIT):
            if sub is None:
                await changed.wait()
                changed = anyio.Event()
            else:
                event = await sub.__anext__()
                expect(isinstance(event, ToolsListChanged), f"a tool list change: {event}")
                heard.append("tools_list_changed")

    async def run(client, sub) -> dict:
        before = {t.name for t in (await client.list_tools()).tools}
        expect("v_version" not in before, f"not served before it is dropped: {sorted(before)}")
        dropped = time.monotonic()
        drop_in(plugins, new_plugin)
        await next_change(sub)
        answer = await client.call_tool("v_version", {})
        took = time.monotonic() - dropped
        listed = {t.name for t in (await client.list_tools()).tools}
        os.remove(os.path.join(plugins, "v.wasm"))
        await next_change(sub)
        after = {t.name for t in (await client.list_tools()).tools}
        try:
            gone = await client.call_tool("v_version", {})
            gone_error = f"result: {gone}"
        except Exception as error:  # the SDK raises the JSON-RPC error
            gone_error = str(error)
        return {
            "answer": answer.content[0].text,
            "seconds": round(took, 3),
            "listed": "v_version" in listed,
            "listed_after_removal": "v_version" in after,
            "gone_error": gone_error,
        }

    with anyio.fail_after(WAIT * 4):
        async with Client(server, mode=mode, read_timeout_seconds=WAIT, message_handler=on_message) as client:
            if mode == "legacy":
                summary = await run(client, None)
            else:
                async with client.listen(tools_list_changed=True) as sub:
                    expect(sub.honored.tools_list_changed, f"tool changes honoured: {sub.honored}")
                    summary = await run(client, sub)
            version = client.protocol_version
    expect(summary["seconds"] < PROMISED, f"the dropped plugin answered after {summary['seconds']} s")
    print(json.dumps({"mode": mode, "protocol_version": version, "heard": heard, **summary}))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    asyncio.run(main(*sys.argv[1:]))
