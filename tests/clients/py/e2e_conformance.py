"""Drives the conformance plugin with the official MCP Python SDK client over stdio: sampling,
elicitation and roots callbacks that answer, a resource subscription and a list change.

Usage: e2e_conformance.py PADDOCK_BIN PLUGINS_DIR MODE
MODE is `legacy` (the server asks the client on the session; `resources/subscribe` and list
changes arrive as session notifications) or `2026-07-28` (each question is an `input_required`
round trip the client retries; changes arrive on a `subscriptions/listen` stream). The plugin is
the conformance plugin, exposed without a prefix. Prints one JSON line; exits non-zero on a
mismatch.
"""

import asyncio
import json
import sys
import warnings

import anyio
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

WAIT = 10


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"e2e check failed: {what}")


async def main(binary: str, plugins: str, mode: str) -> None:
    asked: list[str] = []
    notes: list[str] = []
    heard = {"notifications/resources/updated": anyio.Event(), "notifications/tools/list_changed": anyio.Event()}

    async def sample(context, params):
        asked.append("sampling")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="Hello there!"), model="e2e-model", stop_reason="endTurn")

    async def elicit(context, params):
        asked.append("elicitation")
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def roots(context):
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])

    async def on_message(message) -> None:
        if isinstance(message, Exception):
            return
        method = getattr(message, "method", None)
        if method in heard:
            notes.append(method)
            heard[method].set()

    params = StdioServerParameters(command=binary, args=["serve", plugins], env={"RUST_LOG": "warn"})
    async with Client(
        params,
        mode=mode,
        read_timeout_seconds=30,
        sampling_callback=sample,
        elicitation_callback=elicit,
        list_roots_callback=roots,
        message_handler=on_message,
    ) as client:
        sampled = await client.call_tool("test_sampling", {"prompt": "Say hello"})
        expect(sampled.content[0].text == "LLM response: Hello there!", f"sampling answered: {sampled}")

        everything = await client.call_tool("test_input_required_result_multiple_inputs", {})
        text = everything.content[0].text
        expect(text == "Name: Ada; Greeting: Hello there!; Roots: 1", f"three questions answered: {text}")
        expect(sorted(asked[1:]) == ["elicitation", "roots", "sampling"], f"each asked once: {asked}")

        changes: list[str] = []
        if mode == "legacy":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)  # the legacy way, on purpose
                await client.subscribe_resource("test://watched-resource")
            await client.call_tool("test_trigger_resource_update", {})
            with anyio.fail_after(WAIT):
                await heard["notifications/resources/updated"].wait()
            await client.call_tool("test_trigger_tool_change", {})
            with anyio.fail_after(WAIT):
                await heard["notifications/tools/list_changed"].wait()
            changes = notes
        else:
            async with client.listen(tools_list_changed=True, resource_subscriptions=["test://watched-resource"]) as sub:
                expect(sub.honored.tools_list_changed, f"tool changes honoured: {sub.honored}")
                await client.call_tool("test_trigger_resource_update", {})
                with anyio.fail_after(WAIT):
                    event = await sub.__anext__()
                expect(isinstance(event, ResourceUpdated) and event.uri == "test://watched-resource", f"the update arrived: {event}")
                changes.append("resource_updated")
                await client.call_tool("test_trigger_tool_change", {})
                with anyio.fail_after(WAIT):
                    event = await sub.__anext__()
                expect(isinstance(event, ToolsListChanged), f"the list change arrived: {event}")
                changes.append("tools_list_changed")

        tools = await client.list_tools()
        expect(any(t.name == "json_schema_2020_12_tool" for t in tools.tools), "listed again after the change")

        print(json.dumps({"mode": mode, "protocol_version": client.protocol_version, "sampled": sampled.content[0].text, "everything": text, "changes": changes}))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
