//! The 1 MiB echo section: sequential `tools/call text_echo` over stdio with a 1 MiB ASCII
//! `text`, each reply's text checked to be the same length, with the server's CPU and minor page
//! faults per call beside the latency. Paddock serves it from a temporary folder holding a copy
//! of the `text` plugin and a `paddock.toml` raising its output limit to 4 MiB (the default
//! 1 MiB is too small for the result once wrapped).

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use serde_json::Value;

use crate::measure::{cpu_ns, millis, minor_faults, p50_p99};
use crate::process::WAIT;
use crate::stdio::{StdioServer, Target};

/// The size of the echoed text.
pub const TEXT_BYTES: usize = 1 << 20;

/// The figures of one 1 MiB round of one server.
#[derive(Debug, Clone, Default)]
pub struct LargeEchoFigures {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub cpu_per_call_ms: f64,
    pub faults_per_call: f64,
}

/// A temporary plugins folder serving `text_echo` with a 4 MiB output limit.
pub fn plugin_folder(text_wasm: &Path) -> Result<tempfile::TempDir> {
    let folder = tempfile::Builder::new().prefix("paddock-bench-1mib-").tempdir()?;
    std::fs::copy(text_wasm, folder.path().join("text.wasm")).with_context(|| format!("copy {}", text_wasm.display()))?;
    std::fs::write(folder.path().join("paddock.toml"), "[plugins.text]\nlimits = { output = \"4MiB\" }\n")?;
    Ok(folder)
}

fn large_call(id: usize, text: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"text_echo","arguments":{{"text":"{text}"}}}}}}"#)
}

/// Checks that `reply` echoes a text of [`TEXT_BYTES`].
fn check(reply: &str) -> Result<()> {
    let reply: Value = serde_json::from_str(reply).context("the reply is not JSON")?;
    let text = reply.pointer("/result/content/0/text").and_then(Value::as_str);
    ensure!(text.map(str::len) == Some(TEXT_BYTES), "the reply does not echo {TEXT_BYTES} bytes: {}", reply.to_string().chars().take(300).collect::<String>());
    Ok(())
}

/// One round of `target`: two warm-up calls, then `calls` timed ones.
pub fn round(target: &Target, calls: usize) -> Result<LargeEchoFigures> {
    let text: String = (b'a'..=b'z').cycle().take(TEXT_BYTES).map(char::from).collect();
    let (mut server, _) = StdioServer::start(&target.command, WAIT)?;
    for id in 1..=2 {
        check(server.request(&large_call(id, &text))?)?;
    }
    let mut latencies = Vec::with_capacity(calls);
    let (cpu_before, faults_before) = (cpu_ns(server.pid())?, minor_faults(server.pid())?);
    for id in 0..calls {
        let request = large_call(100 + id, &text);
        let started = Instant::now();
        server.send(&request)?;
        let reply = server.receive()?;
        latencies.push(millis(started.elapsed()));
        check(reply).with_context(|| format!("{} failed a 1 MiB call", target.name))?;
    }
    let cpu_per_call_ms = (cpu_ns(server.pid())? - cpu_before) as f64 / 1e6 / calls as f64;
    let faults_per_call = (minor_faults(server.pid())? - faults_before) as f64 / calls as f64;
    server.stop()?;
    let (p50_ms, p99_ms) = p50_p99(&mut latencies);
    Ok(LargeEchoFigures { p50_ms, p99_ms, cpu_per_call_ms, faults_per_call })
}
