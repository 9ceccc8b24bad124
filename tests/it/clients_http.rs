//! The client matrix over the network transports: the official Python SDK (`mcp` 2.3.0, auto,
//! legacy and 2026-07-28) over Streamable HTTP and HTTP+SSE, `mcp` 1.27.0 over WebSocket, the
//! TypeScript SDK (1.32.2) over Streamable HTTP, HTTP+SSE and WebSocket, and the Inspector CLI
//! (2.12) over Streamable HTTP in each of its eras. Each lists tools, calls one, reads a
//! resource, gets a prompt and answers an input request where the client can.

use paddock_tests::http::HttpHost;
use paddock_tests::{conformance_plugins, installed_client, run_client_script};
use serde_json::Value;

/// Runs a client script against a fresh host; its JSON summary, or `None` when the client's
/// runtime is not installed (outside CI).
async fn run_client(runtime: (&str, &str), script: &str, args: &[&str]) -> Option<Value> {
    let interpreter = installed_client(runtime.0, runtime.1)?;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await.expect("paddock serves over HTTP");
    let url = host.url("");
    let mut argv: Vec<&std::ffi::OsStr> = vec![url.as_ref()];
    argv.extend(args.iter().map(std::ffi::OsStr::new));
    Some(run_client_script(&interpreter, script, &argv, || format!("server log:\n{}", host.log_text())).await)
}

const PYTHON: (&str, &str) = ("PADDOCK_TEST_PYTHON", "the Python client (mcp 2.3.0)");
const PYTHON_WS: (&str, &str) = ("PADDOCK_TEST_PYTHON_WS", "the Python WebSocket client (mcp 1.27.0)");
const NODE: (&str, &str) = ("PADDOCK_TEST_NODE", "Node 22 with the TypeScript SDK and the Inspector");

const TEXT: &str = "This is a simple text response for testing.";
const RESOURCE: &str = "This is the content of the static text resource.";
const PROMPT: &str = "This is a simple prompt for testing.";

fn assert_common(summary: &Value) {
    assert_eq!(summary["text"], TEXT, "{summary}");
    assert_eq!(summary["resource"], RESOURCE, "{summary}");
    assert_eq!(summary["prompt"], PROMPT, "{summary}");
    assert!(summary["tools"].as_u64().is_some_and(|n| n > 10), "{summary}");
}

fn assert_answered_legacy(summary: &Value) {
    assert!(summary["answered"].as_str().is_some_and(|a| a.starts_with("User response: action=accept")), "{summary}");
}

#[tokio::test]
async fn python_streamable_http_in_every_mode() {
    for (mode, version, answered) in
        [("legacy", "2025-11-25", None), ("2026-07-28", "2026-07-28", Some("Hello, Ada!")), ("auto", "2026-07-28", Some("Hello, Ada!"))]
    {
        let Some(summary) = run_client(PYTHON, "py/e2e_http.py", &[mode, "http"]).await else { return };
        assert_common(&summary);
        assert_eq!(summary["protocol_version"], version, "{mode}: {summary}");
        match answered {
            Some(answer) => assert_eq!(summary["answered"], answer, "{summary}"),
            None => assert_answered_legacy(&summary),
        }
    }
}

#[tokio::test]
async fn python_http_sse() {
    let Some(summary) = run_client(PYTHON, "py/e2e_http.py", &["legacy", "sse"]).await else { return };
    assert_common(&summary);
    assert_answered_legacy(&summary);
}

#[tokio::test]
async fn python_websocket() {
    let Some(summary) = run_client(PYTHON_WS, "py-ws/e2e_ws.py", &[]).await else { return };
    assert_common(&summary);
    assert_answered_legacy(&summary);
}

#[tokio::test]
async fn typescript_on_every_transport() {
    for transport in ["http", "sse", "ws"] {
        let Some(summary) = run_client(NODE, "ts/e2e_http.mjs", &[transport]).await else { return };
        assert_common(&summary);
        assert_answered_legacy(&summary);
    }
}

#[tokio::test]
async fn inspector_cli_in_every_era() {
    for (era, observed) in [("legacy", "legacy"), ("auto", "2026-07-28"), ("modern", "2026-07-28")] {
        let Some(summary) = run_client(NODE, "ts/e2e_inspector.mjs", &[era]).await else { return };
        assert_common(&summary);
        assert_eq!(summary["protocol_era"], observed, "{summary}");
        assert!(summary["refused"].as_str().is_some_and(|r| r.contains("elicitation")), "{summary}");
    }
}
