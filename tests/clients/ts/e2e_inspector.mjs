// Drives `paddock serve --http` with the MCP Inspector CLI (`mcp-inspector --cli`, 2.12.0) over
// Streamable HTTP: one CLI run each lists tools, calls a tool, reads a resource and gets a prompt,
// and one more calls a tool that needs elicitation, which the CLI never declares (it cannot ask a
// user), so the server must refuse it by naming the capability.
//
// Usage: node e2e_inspector.mjs URL ERA
// URL is the listener's base URL (e.g. http://127.0.0.1:3999); the CLI connects to URL/mcp with
// `--transport http`. ERA is the CLI's `--protocol-era`: `legacy` (initialize, a session), `auto`
// (probes `server/discover`, falls back) or `modern` (2026-07-28, stateless). Each CLI run is
// bounded by a 10 s timeout and gets its own empty HOME, so nothing is written to the user's
// ~/.mcp-inspector. The plugin is the conformance plugin, exposed without a prefix. Prints one
// JSON line (last on stdout); exits non-zero on a mismatch.

import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const WAIT = 10_000;
const INSPECTOR = fileURLToPath(new URL("./node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js", import.meta.url));

function expect(condition, what) {
  if (!condition) {
    console.error(`e2e check failed: ${what}`);
    process.exit(1);
  }
}

const [url, era] = process.argv.slice(2);
expect(url && ["legacy", "auto", "modern"].includes(era), "usage: e2e_inspector.mjs URL legacy|auto|modern");
const endpoint = `${url.replace(/\/+$/, "")}/mcp`;
const home = mkdtempSync(join(tmpdir(), "paddock-inspector-"));
process.on("exit", () => rmSync(home, { recursive: true, force: true }));

// One CLI run: `--format json` prints `{"result": …}` on stdout, or `{"error": …}` on stderr.
function inspector(...args) {
  const argv = [INSPECTOR, "--cli", endpoint, "--transport", "http", "--protocol-era", era, "--connect-timeout", String(WAIT), "--format", "json", ...args];
  const run = spawnSync(process.execPath, argv, { encoding: "utf8", timeout: WAIT, env: { ...process.env, HOME: home } });
  expect(!run.error, `inspector ${args.join(" ")}: ${run.error}`);
  const out = run.status === 0 ? run.stdout : run.stderr;
  let parsed;
  try {
    parsed = JSON.parse(out.trim().split("\n").at(-1));
  } catch {
    expect(false, `inspector ${args.join(" ")} (exit ${run.status}) printed no JSON:\n${run.stdout}\n${run.stderr}`);
  }
  return { status: run.status, ...parsed };
}

function ok(run, what) {
  expect(run.status === 0 && run.result, `${what}: exit ${run.status}, ${JSON.stringify(run.error ?? run)}`);
  return run.result;
}

const listed = ok(inspector("--method", "tools/list"), "tools/list");
const names = new Set(listed.tools.map((t) => t.name));
expect(names.has("test_simple_text"), `tools listed: ${[...names]}`);

const simple = ok(inspector("--method", "tools/call", "--tool-name", "test_simple_text"), "tools/call test_simple_text");
expect(!simple.isError, `test_simple_text is not an error: ${JSON.stringify(simple)}`);
const text = simple.content[0].text;
expect(text === "This is a simple text response for testing.", `test_simple_text: ${JSON.stringify(text)}`);

const read = ok(inspector("--method", "resources/read", "--uri", "test://static-text"), "resources/read");
const resource = read.contents[0].text;
expect(resource === "This is the content of the static text resource.", `test://static-text: ${JSON.stringify(resource)}`);

const got = ok(inspector("--method", "prompts/get", "--prompt-name", "test_simple_prompt"), "prompts/get");
expect(got.messages.length === 1 && got.messages[0].role === "user", `one user message: ${JSON.stringify(got.messages)}`);
const prompt = got.messages[0].content.text;
expect(prompt === "This is a simple prompt for testing.", `test_simple_prompt: ${JSON.stringify(prompt)}`);

// The CLI declares no elicitation: a tool that asks is refused (2026-07-28: -32021, HTTP 400).
const asked = inspector("--method", "tools/call", "--tool-name", "test_input_required_result_elicitation");
expect(asked.status !== 0 && /needs the client capabilities elicitation/.test(asked.error?.message ?? ""), `the asking tool is refused: ${JSON.stringify(asked)}`);

// A 2026-07-28 result says what it is (`resultType`); a handshake-era one does not.
const observed = simple.resultType === "complete" ? "2026-07-28" : "legacy";
expect(observed === (era === "legacy" ? "legacy" : "2026-07-28"), `era ${era} ended at ${observed}: ${JSON.stringify(simple)}`);

console.log(
  JSON.stringify({
    transport: "http",
    client: "inspector-cli",
    mode: era,
    protocol_era: observed,
    tools: names.size,
    text,
    resource,
    prompt,
    refused: asked.error.message,
  }),
);
