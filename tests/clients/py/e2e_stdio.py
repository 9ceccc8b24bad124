"""Drives `paddock serve` over stdio with the official MCP Python SDK client.

Usage: e2e_stdio.py PADDOCK_BIN PLUGINS_DIR MODE
MODE is `legacy` (initialize handshake) or `2026-07-28` (stateless, per-request `_meta`).
Prints one JSON line with what the server answered; exits non-zero on the first mismatch.
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"e2e check failed: {what}")


async def main(binary: str, plugins: str, mode: str) -> None:
    params = StdioServerParameters(command=binary, args=["serve", plugins], env={"RUST_LOG": "warn"})
    async with Client(params, mode=mode, read_timeout_seconds=30) as client:
        expect(client.protocol_version == ("2026-07-28" if mode != "legacy" else client.protocol_version), "era")
        tools = await client.list_tools()
        names = sorted(tool.name for tool in tools.tools)
        expect("text_echo" in names, f"text_echo listed, got {names}")

        echoed = await client.call_tool("text_echo", {"text": "hello from python"})
        expect(not echoed.is_error, f"echo is not an error: {echoed}")
        expect(echoed.content[0].text == "hello from python", f"echo text: {echoed.content}")

        counted = await client.call_tool("text_word_count", {"text": "one two\nthree"})
        expect(not counted.is_error, f"word_count is not an error: {counted}")
        expect(counted.structured_content is not None and counted.structured_content.get("words") == 3,
               f"word_count structured content: {counted.structured_content}")

        missing = await client.call_tool("text_echo", {})
        expect(missing.is_error, "echo without its argument is an isError result")

        resources = await client.list_resources()
        uris = sorted(str(r.uri) for r in resources.resources)
        expect("text://about" in uris, f"text://about listed, got {uris}")
        about = await client.read_resource("text://about")
        expect(len(about.contents) >= 1 and about.contents[0].text, f"about has text: {about}")

        prompts = await client.list_prompts()
        prompt_names = sorted(p.name for p in prompts.prompts)
        expect("text_summarize" in prompt_names, f"text_summarize listed, got {prompt_names}")
        prompt = await client.get_prompt("text_summarize", {"text": "Paddock runs plugins."})
        expect(len(prompt.messages) >= 1, "prompt has messages")
        rendered = json.dumps(prompt.messages[0].content.model_dump(mode="json"))
        expect("Paddock runs plugins." in rendered, f"prompt includes the argument: {rendered}")

        print(json.dumps({
            "mode": mode,
            "protocol_version": client.protocol_version,
            "tools": names,
            "resources": uris,
            "prompts": prompt_names,
            "echo": echoed.content[0].text,
        }))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
