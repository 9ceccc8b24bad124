// Calls `fixture_context` on `paddock serve --http` with the official TypeScript SDK client,
// sending an OAuth access token as `Authorization: Bearer`, and prints whom the plugin was told
// it serves.
//
// Usage: node e2e_oauth.mjs URL TOKEN TRANSPORT
// TRANSPORT is `http` (StreamableHTTPClientTransport to URL/mcp, a 2025-11-25 session) or `sse`
// (SSEClientTransport, the 2024-11-05 HTTP+SSE pair at URL/sse). Prints one JSON line
// `{"caller": ..., "protocol_version": ...}`; exits non-zero on a failure.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const WAIT = 10_000;
const [url, token, kind] = process.argv.slice(2);
if (!url || !token || !["http", "sse"].includes(kind)) {
  console.error("usage: e2e_oauth.mjs URL TOKEN http|sse");
  process.exit(2);
}
setTimeout(() => {
  console.error(`e2e check failed: the run took longer than ${(3 * WAIT) / 1000} s`);
  process.exit(1);
}, 3 * WAIT).unref();

const base = url.replace(/\/+$/, "");
const headers = { Authorization: `Bearer ${token}` };
let transport;
if (kind === "http") {
  transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } });
} else {
  // The event stream is opened with `fetch` too: it needs the header as well as the POSTs.
  const fetchWithToken = (input, init) => fetch(input, { ...init, headers: { ...(init?.headers ?? {}), ...headers } });
  transport = new SSEClientTransport(new URL(`${base}/sse`), { requestInit: { headers }, eventSourceInit: { fetch: fetchWithToken } });
}
let negotiated = null;
const adopt = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (version) => {
  negotiated = version;
  adopt?.(version);
};

const client = new Client({ name: "paddock-e2e-oauth", version: "1.0.0" });
await client.connect(transport, { timeout: WAIT });
const result = await client.callTool({ name: "fixture_context", arguments: {} }, undefined, { timeout: WAIT });
if (result.isError) {
  console.error(`fixture_context failed: ${JSON.stringify(result)}`);
  process.exit(1);
}
const seen = JSON.parse(result.content[0].text);
await client.close();
console.log(JSON.stringify({ caller: seen.caller, protocol_version: negotiated }));
