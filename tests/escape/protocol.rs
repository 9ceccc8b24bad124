//! Attacks from the client's side of the wire: a thousand pipelined calls to a slow tool, and
//! lines that are not JSON, not UTF-8, nested past any parser's depth, larger than a frame may
//! be, or JSON-RPC with the wrong types. Each is answered with its error, and the host goes on
//! answering a ping and the innocent plugin within a second.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_tests::{PluginDir, fixture_wasm};
use serde_json::{Value, json};

use crate::harness::{ATTACKER, Host, INNOCENT};

/// How many calls the pipelining client sends without waiting.
pub const PIPELINED_CALLS: i64 = 1000;
/// The slow tool the pipelined calls use, and its arguments.
pub const SLOW_TOOL: &str = "block_on_clock";
const SLOW_ARGS: &str = r#"{"ms":50}"#;
/// The JSON-RPC code for a request refused because too many are in flight.
const SERVER_BUSY: i64 = -32000;

/// A line a client sends.
#[derive(Debug, Clone, Copy)]
pub enum Line {
    /// This text.
    Text(&'static str),
    /// These bytes (not UTF-8).
    Bytes(&'static [u8]),
    /// `[` nested this deep, then closed.
    Nested(usize),
    /// A ping padded one byte past the largest frame the host reads (16 MiB).
    Oversized,
}

impl Line {
    fn bytes(self) -> Vec<u8> {
        match self {
            Line::Text(text) => text.as_bytes().to_vec(),
            Line::Bytes(bytes) => bytes.to_vec(),
            Line::Nested(depth) => format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes(),
            Line::Oversized => {
                let head = r#"{"jsonrpc":"2.0","id":77,"method":"ping","params":{"pad":""#;
                let tail = r#""}}"#;
                let pad = (16 << 20) + 1 - head.len() - tail.len();
                format!("{head}{}{tail}", "x".repeat(pad)).into_bytes()
            }
        }
    }
}

/// A client-side attack: the line and the JSON-RPC error code it must be answered with.
#[derive(Debug, Clone, Copy)]
pub struct Fuzz {
    pub name: &'static str,
    pub line: Line,
    pub code: i64,
}

/// Every client-side attack.
pub const FUZZ: &[Fuzz] = &[
    Fuzz { name: "not_json", line: Line::Text("{not json"), code: -32700 },
    Fuzz { name: "not_utf8", line: Line::Bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}"), code: -32700 },
    Fuzz { name: "nested_past_any_depth", line: Line::Nested(100_000), code: -32700 },
    Fuzz { name: "line_larger_than_a_frame", line: Line::Oversized, code: -32600 },
    Fuzz { name: "wrong_jsonrpc_version", line: Line::Text(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#), code: -32600 },
    Fuzz { name: "method_not_a_string", line: Line::Text(r#"{"jsonrpc":"2.0","id":2,"method":5}"#), code: -32600 },
    Fuzz { name: "id_is_an_object", line: Line::Text(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#), code: -32600 },
    Fuzz { name: "params_a_string", line: Line::Text(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"innocent_echo"}"#), code: -32600 },
    Fuzz {
        name: "arguments_not_an_object",
        line: Line::Text(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"innocent_echo","arguments":"x"}}"#),
        code: -32602,
    },
    Fuzz { name: "name_not_a_string", line: Line::Text(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":7}}"#), code: -32602 },
    Fuzz { name: "unknown_tool", line: Line::Text(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nobody_here"}}"#), code: -32602 },
    Fuzz { name: "unknown_method", line: Line::Text(r#"{"jsonrpc":"2.0","id":7,"method":"shell/exec"}"#), code: -32601 },
    Fuzz { name: "empty_batch", line: Line::Text("[]"), code: -32600 },
    Fuzz { name: "a_bare_number", line: Line::Text("42"), code: -32600 },
];

/// A folder with the hostile plugin (a 2 s deadline, 16 calls at once) and the innocent one.
fn folder() -> PluginDir {
    PluginDir::new()
        .add(INNOCENT, &fixture_wasm("fixture"))
        .add(ATTACKER, &fixture_wasm("hostile"))
        .write(&format!("{ATTACKER}.toml"), "limits = { timeout = \"2s\", concurrency = 16 }\n")
}

/// Sends every fuzz line in turn; each must get its error, and the host must go on.
pub async fn fuzz_all() -> Result<()> {
    let plugins = folder();
    let mut host = Host::start(plugins.path()).await?;
    for fuzz in FUZZ {
        host.stdio.send_bytes(&fuzz.line.bytes()).await?;
        let reply = tokio::time::timeout(Duration::from_secs(10), host.stdio.recv()).await.with_context(|| format!("{}: no answer", fuzz.name))??;
        ensure!(reply["error"]["code"] == fuzz.code, "{}: expected code {}, got {reply}", fuzz.name, fuzz.code);
        host.answers_others(fuzz.name).await?;
    }
    host.close().await?;
    Ok(())
}

/// What the answers to the pipelined calls were.
#[derive(Debug, Default)]
pub struct Tally {
    pub answered: usize,
    pub failed_in_time: usize,
    pub busy: usize,
}

/// Sends `PIPELINED_CALLS` calls of the slow tool without waiting, then a ping and a call to
/// the innocent plugin; those two are answered within a second, and every call is answered
/// exactly once: a result (its own, or a deadline) or `-32000`.
pub async fn pipelined() -> Result<Tally> {
    let plugins = folder();
    let mut host = Host::start(plugins.path()).await?;
    let args: Value = serde_json::from_str(SLOW_ARGS)?;
    let mut ids = Vec::new();
    for _ in 0..PIPELINED_CALLS {
        ids.push(host.send("tools/call", json!({"name": format!("{ATTACKER}_{SLOW_TOOL}"), "arguments": args})).await?);
    }
    host.answers_others_or_busy("behind a thousand pipelined calls").await?;
    let started = Instant::now();
    let mut tally = Tally::default();
    for id in ids {
        let reply = host.reply(id, Duration::from_secs(60)).await?;
        match (&reply["result"], reply["error"]["code"].as_i64()) {
            (result, None) if result["isError"] != true => {
                ensure!(result["content"][0]["text"] == "waited 50 ms", "{reply}");
                tally.answered += 1;
            }
            (result, None) => {
                let text = result["content"][0]["text"].as_str().unwrap_or_default();
                ensure!(text.contains("timed out") || text.contains("concurrency limit"), "{reply}");
                tally.failed_in_time += 1;
            }
            (_, Some(SERVER_BUSY)) => tally.busy += 1,
            (_, Some(_)) => anyhow::bail!("unexpected answer {reply}"),
        }
    }
    ensure!(started.elapsed() < Duration::from_secs(30), "the calls took {:?} to be answered", started.elapsed());
    host.answers_others("after a thousand pipelined calls").await?;
    ensure!(host.unclaimed() == 0, "{} replies to requests nobody sent", host.unclaimed());
    host.close().await?;
    Ok(tally)
}
