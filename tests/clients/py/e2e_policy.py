"""Tool policy and approvals as the official MCP Python SDK client meets them over Streamable HTTP.

Usage: e2e_policy.py URL MODE TOKEN ANSWER
URL is the listener's base URL; MODE `legacy` or `2026-07-28`; TOKEN the bearer token sent in
the Authorization header; ANSWER what the person says to an approval form: `yes`, `no` or
`dismiss`. The server serves the conformance plugin without a prefix, with a policy that hides
`test_error_handling` from this token's holder and asks before `test_simple_text` runs. Prints
one JSON line (last on stdout); exits non-zero on a mismatch.
"""

import asyncio
import json
import sys

import anyio
import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

WAIT = 10


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"e2e check failed: {what}")


async def main(url: str, mode: str, token: str, answer: str) -> None:
    forms: list[str] = []

    async def elicit(context, params):
        forms.append(params.message)
        if answer == "yes":
            return types.ElicitResult(action="accept", content={"approve": True})
        if answer == "no":
            return types.ElicitResult(action="accept", content={"approve": False})
        return types.ElicitResult(action="cancel")

    http = httpx2.AsyncClient(timeout=httpx2.Timeout(WAIT, read=300), headers={"Authorization": f"Bearer {token}"})
    server = streamable_http_client(f"{url.rstrip('/')}/mcp", http_client=http)
    with anyio.fail_after(WAIT * 6):
        async with Client(server, mode=mode, read_timeout_seconds=WAIT, elicitation_callback=elicit) as client:
            version = client.protocol_version
            names = {t.name for t in (await client.list_tools()).tools}
            expect("test_simple_text" in names, f"the asked tool is listed: {sorted(names)}")
            hidden_listed = "test_error_handling" in names

            hidden_error = None
            try:
                hidden = await client.call_tool("test_error_handling", {})
                hidden_error = f"result: {hidden}"
            except Exception as error:  # the SDK raises the JSON-RPC error
                hidden_error = str(error)
            unknown_error = None
            try:
                unknown = await client.call_tool("test_no_such_tool", {})
                unknown_error = f"result: {unknown}"
            except Exception as error:
                unknown_error = str(error)

            asked = await client.call_tool("test_simple_text", {})
            text = asked.content[0].text if asked.content else ""

    print(
        json.dumps(
            {
                "mode": mode,
                "protocol_version": version,
                "hidden_listed": hidden_listed,
                "hidden_error": hidden_error,
                "unknown_error": unknown_error,
                "forms": forms,
                "is_error": asked.is_error,
                "text": text,
            }
        )
    )


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    asyncio.run(main(*sys.argv[1:]))
