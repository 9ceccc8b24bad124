"""Drives `paddock serve --http` with the official MCP Python SDK client over HTTP: lists tools,
calls a tool, reads a resource, gets a prompt and answers an input request.

Usage: e2e_http.py URL MODE TRANSPORT
URL is the listener's base URL (e.g. http://127.0.0.1:3999). TRANSPORT is `http` (Streamable
HTTP at URL/mcp) with MODE `auto` (the client probes `server/discover` and falls back to
`initialize`), `legacy` (initialize handshake, a session) or `2026-07-28` (stateless, each
request carries its version); or `sse` (the 2024-11-05 HTTP+SSE transport at URL/sse) with MODE
`legacy`. A legacy session answers the server's `elicitation/create` from `test_elicitation`; a
2026-07-28 client answers the `input_required` result of `test_input_required_result_elicitation`
and retries. The plugin is the conformance plugin, exposed without a prefix. Prints one JSON line
(last on stdout); exits non-zero on a mismatch.
"""

import asyncio
import json
import sys

import anyio
import httpx2
from mcp import Client, types
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

WAIT = 10
MODERN = "2026-07-28"


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


async def main(url: str, mode: str, transport: str) -> None:
    base = url.rstrip("/")
    asked: list[dict] = []
    sent: list[dict] = []  # the headers of every POST the Streamable HTTP client made

    async def elicit(context, params):
        properties = (getattr(params, "requested_schema", None) or {}).get("properties", {})
        asked.append({"message": params.message, "fields": sorted(properties)})
        if "username" in properties:
            return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def record(request: httpx2.Request) -> None:
        if request.method == "POST":
            body = json.loads(request.content or b"{}")
            sent.append({"method": body.get("method"), "headers": {k.lower(): v for k, v in request.headers.items()}})

    timeout = httpx2.Timeout(WAIT, read=300)  # the read timeout covers a held-open event stream
    if transport == "http":
        http = httpx2.AsyncClient(timeout=timeout, event_hooks={"request": [record]})
        server = streamable_http_client(f"{base}/mcp", http_client=http)
    elif transport == "sse":
        expect(mode == "legacy", f"the HTTP+SSE transport is legacy only, not {mode}")
        http = None
        server = sse_client(f"{base}/sse", timeout=WAIT)
    else:
        raise SystemExit(f"unknown transport {transport!r}\n{__doc__}")

    with anyio.fail_after(WAIT * 6):
        async with Client(server, mode=mode, read_timeout_seconds=WAIT, elicitation_callback=elicit) as client:
            version = client.protocol_version
            if mode == "legacy":
                expect(version is not None and version < MODERN, f"a handshake-era version: {version}")
            else:
                expect(version == MODERN, f"{mode} ends at {MODERN} against this server: {version}")

            tools = await client.list_tools()
            names = {t.name for t in tools.tools}
            expect({"test_simple_text", "test_elicitation", "test_input_required_result_elicitation"} <= names, f"tools listed: {sorted(names)}")

            simple = await client.call_tool("test_simple_text", {})
            expect(not simple.is_error, f"test_simple_text is not an error: {simple}")
            text = simple.content[0].text
            expect(text == "This is a simple text response for testing.", f"test_simple_text: {text!r}")

            read = await client.read_resource("test://static-text")
            resource = read.contents[0].text
            expect(resource == "This is the content of the static text resource.", f"test://static-text: {resource!r}")

            got = await client.get_prompt("test_simple_prompt")
            expect(len(got.messages) == 1 and got.messages[0].role == "user", f"one user message: {got.messages}")
            prompt = got.messages[0].content.text
            expect(prompt == "This is a simple prompt for testing.", f"test_simple_prompt: {prompt!r}")

            if version == MODERN:
                answered = await client.call_tool("test_input_required_result_elicitation", {})
                expect(not answered.is_error, f"the input_required tool is not an error: {answered}")
                answer = answered.content[0].text
                expect(answer == "Hello, Ada!", f"the retried call answered: {answer!r}")
                expect(asked == [{"message": "What is your name?", "fields": ["name"]}], f"asked once for a name: {asked}")
            else:
                answered = await client.call_tool("test_elicitation", {"message": "Who are you?"})
                expect(not answered.is_error, f"test_elicitation is not an error: {answered}")
                answer = answered.content[0].text
                expected = 'User response: action=accept, content={"username":"ada","email":"ada@example.com"}'
                expect(answer == expected, f"the elicitation answer came back: {answer!r}")
                expect(asked == [{"message": "Who are you?", "fields": ["email", "username"]}], f"asked once for user info: {asked}")

    summary = {
        "transport": transport,
        "mode": mode,
        "protocol_version": version,
        "tools": len(names),
        "text": text,
        "resource": resource,
        "prompt": prompt,
        "answered": answer,
    }
    if transport == "http":
        # What a 2026-07-28 request carries on the wire: its routing headers.
        calls = [s for s in sent if s["method"] == "tools/call"]
        last = calls[-1]["headers"] if calls else {}
        summary["headers"] = {
            "mcp-protocol-version": last.get("mcp-protocol-version"),
            "mcp-method": last.get("mcp-method"),
            "mcp-name": last.get("mcp-name"),
            "mcp-session-id": "mcp-session-id" in last,
        }
        summary["methods"] = [s["method"] for s in sent]
        if version == MODERN:
            expect(all(s["headers"].get("mcp-method") == s["method"] for s in sent if s["method"]), f"each request names its method: {sent}")
            expect(last.get("mcp-name") == "test_input_required_result_elicitation", f"a tools/call names its tool: {last}")
            expect(all(s["headers"].get("mcp-protocol-version") == MODERN for s in sent if s["method"]), f"each request names its version: {sent}")
            expect(not any("mcp-session-id" in s["headers"] for s in sent), f"no session in 2026-07-28: {sent}")
        else:
            expect(last.get("mcp-session-id") is not None, f"a legacy request carries its session: {last}")
        await http.aclose()
    print(json.dumps(summary))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
    except BaseException as error:  # a check that failed inside a task group arrives wrapped
        found = leaves(error)
        if isinstance(error, SystemExit) or not any(isinstance(leaf, Mismatch) for leaf in found):
            raise
        raise SystemExit("\n".join(str(leaf) for leaf in found if isinstance(leaf, Mismatch))) from None
