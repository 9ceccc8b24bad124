"""Drives `paddock serve --http` over WebSocket with the MCP Python SDK 1.x client
(`mcp.client.websocket.websocket_client`, subprotocol `mcp`, one JSON-RPC message per text frame):
lists tools, calls a tool, reads a resource, gets a prompt and answers the server's
`elicitation/create` from `test_elicitation` in a legacy session.

Usage: e2e_ws.py URL
URL is the listener's base URL (http://127.0.0.1:3999 or ws://127.0.0.1:3999); the script
connects to its /ws. Runs in the venv pinned by tests/clients/py-ws/requirements.lock (mcp[ws]
1.27.0; the 2.x SDK has no WebSocket client). The plugin is the conformance plugin, exposed
without a prefix. Prints one JSON line (last on stdout); exits non-zero on a mismatch.
"""

import asyncio
import json
import sys
from datetime import timedelta

import anyio
from mcp import ClientSession, types
from mcp.client.websocket import websocket_client

WAIT = 10


class Mismatch(Exception):
    pass


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise Mismatch(f"e2e check failed: {what}")


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside the task groups' exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def ws_url(url: str) -> str:
    base = url.rstrip("/")
    for http, ws in (("http://", "ws://"), ("https://", "wss://")):
        if base.startswith(http):
            base = ws + base[len(http):]
    return f"{base}/ws"


async def main(url: str) -> None:
    asked: list[dict] = []

    async def elicit(context, params: types.ElicitRequestParams):
        properties = (getattr(params, "requestedSchema", None) or {}).get("properties", {})
        asked.append({"message": params.message, "fields": sorted(properties)})
        return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

    with anyio.fail_after(WAIT * 6):
        async with websocket_client(ws_url(url)) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=timedelta(seconds=WAIT), elicitation_callback=elicit) as session:
                init = await session.initialize()
                version = init.protocolVersion
                expect(version == types.LATEST_PROTOCOL_VERSION, f"the client's version was accepted: {version}")

                tools = await session.list_tools()
                names = {t.name for t in tools.tools}
                expect({"test_simple_text", "test_elicitation"} <= names, f"tools listed: {sorted(names)}")

                simple = await session.call_tool("test_simple_text", {})
                expect(not simple.isError, f"test_simple_text is not an error: {simple}")
                text = simple.content[0].text
                expect(text == "This is a simple text response for testing.", f"test_simple_text: {text!r}")

                read_result = await session.read_resource("test://static-text")
                resource = read_result.contents[0].text
                expect(resource == "This is the content of the static text resource.", f"test://static-text: {resource!r}")

                got = await session.get_prompt("test_simple_prompt")
                expect(len(got.messages) == 1 and got.messages[0].role == "user", f"one user message: {got.messages}")
                prompt = got.messages[0].content.text
                expect(prompt == "This is a simple prompt for testing.", f"test_simple_prompt: {prompt!r}")

                answered = await session.call_tool("test_elicitation", {"message": "Who are you?"})
                expect(not answered.isError, f"test_elicitation is not an error: {answered}")
                answer = answered.content[0].text
                expected = 'User response: action=accept, content={"username":"ada","email":"ada@example.com"}'
                expect(answer == expected, f"the elicitation answer came back: {answer!r}")
                expect(asked == [{"message": "Who are you?", "fields": ["email", "username"]}], f"asked once for user info: {asked}")

    print(json.dumps({
        "transport": "ws",
        "mode": "legacy",
        "protocol_version": version,
        "server": init.serverInfo.name,
        "tools": len(names),
        "text": text,
        "resource": resource,
        "prompt": prompt,
        "answered": answer,
    }))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    try:
        asyncio.run(main(sys.argv[1]))
    except BaseException as error:  # a check that failed inside a task group arrives wrapped
        found = leaves(error)
        if isinstance(error, SystemExit) or not any(isinstance(leaf, Mismatch) for leaf in found):
            raise
        raise SystemExit("\n".join(str(leaf) for leaf in found if isinstance(leaf, Mismatch))) from None
