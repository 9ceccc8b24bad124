// Answers a plugin's sampling and elicitation requests with the official TypeScript SDK client
// over stdio, in a legacy (2025-11-25) session: the host asks the client on the session and runs
// the plugin again with the answers.
//
// Usage: node e2e_legacy_input.mjs PADDOCK_BIN PLUGINS_DIR
// The plugin is the conformance plugin, exposed without a prefix. Prints one JSON line; exits
// non-zero on a mismatch.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

function expect(condition, what) {
  if (!condition) {
    console.error(`e2e check failed: ${what}`);
    process.exit(1);
  }
}

const [binary, plugins] = process.argv.slice(2);
expect(binary && plugins, "usage: e2e_legacy_input.mjs PADDOCK_BIN PLUGINS_DIR");

const transport = new StdioClientTransport({ command: binary, args: ["serve", plugins], env: { ...process.env, RUST_LOG: "warn" }, stderr: "inherit" });
const client = new Client({ name: "paddock-e2e-ts", version: "1.0.0" }, { capabilities: { sampling: {}, elicitation: {} } });

const sampled = [];
const elicited = [];
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  sampled.push(request.params);
  return { role: "assistant", content: { type: "text", text: "Paris, of course." }, model: "e2e-model", stopReason: "endTurn" };
});
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicited.push(request.params);
  const properties = request.params.requestedSchema?.properties ?? {};
  if ("untitledMulti" in properties) {
    return { action: "accept", content: { untitledSingle: "option1", titledSingle: "value1", legacyEnum: "opt1", untitledMulti: ["option1", "option2"], titledMulti: ["value1"] } };
  }
  return { action: "accept", content: { username: "ada", email: "ada@example.com" } };
});

await client.connect(transport);

// The whole list must parse: every schema the SDK sees is one it accepts.
const { tools } = await client.listTools();
expect(tools.some((t) => t.name === "json_schema_2020_12_tool"), "the 2020-12 tool is listed");

const sampling = await client.callTool({ name: "test_sampling", arguments: { prompt: "Capital of France?" } });
expect(!sampling.isError, `test_sampling succeeded: ${JSON.stringify(sampling)}`);
expect(sampled.length === 1 && sampled[0].maxTokens === 100, `the client was asked to sample once: ${JSON.stringify(sampled)}`);

const form = await client.callTool({ name: "test_elicitation", arguments: { message: "Who are you?" } });
expect(!form.isError, `test_elicitation succeeded: ${JSON.stringify(form)}`);

const enums = await client.callTool({ name: "test_elicitation_sep1330_enums", arguments: {} });
expect(!enums.isError, `the enum form went through the SDK's own validation: ${JSON.stringify(enums)}`);
expect(elicited.length === 2, `two forms were asked: ${JSON.stringify(elicited)}`);

console.log(
  JSON.stringify({
    server: client.getServerVersion()?.name ?? null,
    sampling: sampling.content[0].text,
    elicitation: form.content[0].text,
    enums: enums.content[0].text,
    form_message: elicited[0].message,
  }),
);
await client.close();
