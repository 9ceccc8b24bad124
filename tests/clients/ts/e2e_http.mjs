// Drives `paddock serve --http` with the official TypeScript SDK client over the network, in a
// legacy (2025-11-25) session: lists tools, calls a tool, reads a resource, gets a prompt and
// answers the server's `elicitation/create` from `test_elicitation`.
//
// Usage: node e2e_http.mjs URL TRANSPORT
// URL is the listener's base URL (e.g. http://127.0.0.1:3999). TRANSPORT is `http`
// (StreamableHTTPClientTransport to URL/mcp), `sse` (SSEClientTransport, the 2024-11-05 HTTP+SSE
// transport, to URL/sse) or `ws` (WebSocketClientTransport to ws://…/ws, Node 22's WebSocket).
// The plugin is the conformance plugin, exposed without a prefix. Prints one JSON line (last on
// stdout); exits non-zero on a mismatch.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { WebSocketClientTransport } from "@modelcontextprotocol/sdk/client/websocket.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const WAIT = 10_000;

function expect(condition, what) {
  if (!condition) {
    console.error(`e2e check failed: ${what}`);
    process.exit(1);
  }
}

const [url, kind] = process.argv.slice(2);
expect(url && ["http", "sse", "ws"].includes(kind), "usage: e2e_http.mjs URL http|sse|ws");
const base = url.replace(/\/+$/, "");

// Nothing may hang the test: the whole run is bounded, each request has its own timeout too.
setTimeout(() => {
  console.error(`e2e check failed: the run took longer than ${(6 * WAIT) / 1000} s`);
  process.exit(1);
}, 6 * WAIT).unref();

let transport;
if (kind === "http") {
  transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`));
} else if (kind === "sse") {
  transport = new SSEClientTransport(new URL(`${base}/sse`));
} else {
  transport = new WebSocketClientTransport(new URL(`${base.replace(/^http/, "ws")}/ws`));
}

// The version the client adopted from the initialize result (the HTTP transports are told it).
let negotiated = null;
const adopt = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (version) => {
  negotiated = version;
  adopt?.(version);
};

const client = new Client({ name: "paddock-e2e-ts", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const elicited = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicited.push(request.params);
  return { action: "accept", content: { username: "ada", email: "ada@example.com" } };
});

const options = { timeout: WAIT };
try {
  await client.connect(transport, options);
} catch (error) {
  expect(false, `connect over ${kind}: ${error?.stack ?? error}`);
}
expect(negotiated === "2025-11-25", `the session is at 2025-11-25: ${negotiated}`);

const { tools } = await client.listTools(undefined, options);
const names = new Set(tools.map((t) => t.name));
expect(names.has("test_simple_text") && names.has("test_elicitation"), `tools listed: ${[...names]}`);

const simple = await client.callTool({ name: "test_simple_text", arguments: {} }, undefined, options);
expect(!simple.isError, `test_simple_text is not an error: ${JSON.stringify(simple)}`);
const text = simple.content[0].text;
expect(text === "This is a simple text response for testing.", `test_simple_text: ${JSON.stringify(text)}`);

const read = await client.readResource({ uri: "test://static-text" }, options);
const resource = read.contents[0].text;
expect(resource === "This is the content of the static text resource.", `test://static-text: ${JSON.stringify(resource)}`);

const got = await client.getPrompt({ name: "test_simple_prompt" }, options);
expect(got.messages.length === 1 && got.messages[0].role === "user", `one user message: ${JSON.stringify(got.messages)}`);
const prompt = got.messages[0].content.text;
expect(prompt === "This is a simple prompt for testing.", `test_simple_prompt: ${JSON.stringify(prompt)}`);

const form = await client.callTool({ name: "test_elicitation", arguments: { message: "Who are you?" } }, undefined, options);
expect(!form.isError, `test_elicitation is not an error: ${JSON.stringify(form)}`);
const answered = form.content[0].text;
const expected = 'User response: action=accept, content={"username":"ada","email":"ada@example.com"}';
expect(answered === expected, `the elicitation answer came back: ${JSON.stringify(answered)}`);
expect(elicited.length === 1 && elicited[0].message === "Who are you?", `asked once: ${JSON.stringify(elicited)}`);

console.log(
  JSON.stringify({
    transport: kind,
    mode: "legacy",
    protocol_version: negotiated,
    session: kind === "http" ? transport.sessionId ?? null : undefined,
    server: client.getServerVersion()?.name ?? null,
    tools: names.size,
    text,
    resource,
    prompt,
    answered,
  }),
);
if (kind === "http") {
  await transport.terminateSession(); // DELETE /mcp: the session ends now, not at its idle timeout
}
await client.close();
