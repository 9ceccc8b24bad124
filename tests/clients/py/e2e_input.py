"""Answers a plugin's input request with the official MCP Python SDK client over stdio.

Usage: e2e_input.py PADDOCK_BIN PLUGINS_DIR MODE
MODE is `legacy` (the server asks the client with `elicitation/create`) or `2026-07-28` (the
server answers `input_required` and the client retries with the answer). The plugin is the
runtime fixture, exposed as `fixture`. Prints one JSON line; exits non-zero on a mismatch.
"""

import asyncio
import json
import sys

from mcp import Client, types
from mcp.client.stdio import StdioServerParameters


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"e2e check failed: {what}")


async def main(binary: str, plugins: str, mode: str) -> None:
    asked: list[str] = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    params = StdioServerParameters(command=binary, args=["serve", plugins], env={"RUST_LOG": "warn"})
    async with Client(params, mode=mode, read_timeout_seconds=30, elicitation_callback=elicit) as client:
        greeted = await client.call_tool("fixture_ask_name", {})
        expect(not greeted.is_error, f"ask_name is not an error: {greeted}")
        text = greeted.content[0].text
        expect(text == "Hello, Ada (asked by the fixture)", f"the answer and the plugin state came back: {text}")
        expect(asked == ["What is your name?"], f"the client was asked once: {asked}")

        seen = await client.call_tool("fixture_context", {})
        context = json.loads(seen.content[0].text)
        expect("elicitation" in context["clientCapabilities"], f"the plugin sees the client's capabilities: {context}")

        print(json.dumps({"mode": mode, "protocol_version": client.protocol_version, "greeting": text, "context": context}))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
