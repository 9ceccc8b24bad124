//! The stdio transport of the real binary: only protocol on stdout, framing errors, clean EOF,
//! and a large call that does not fault the host's memory in again.

use paddock_tests::{PluginDir, StdioHost, first_text, fixture_wasm, paddock_bin, sample_wasm, test_cache_dir};
use serde_json::json;

#[tokio::test]
async fn guest_println_never_reaches_stdout() {
    let plugins = PluginDir::new().add("fixture", &fixture_wasm("fixture"));
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");
    let result = host.call_tool("fixture_print", json!({"lines": 500})).await.expect("call");
    assert_ne!(result["isError"], true, "{result}");
    // Every line on stdout so far parsed as JSON-RPC (recv fails otherwise); the next reply
    // must be the ping's, with no guest output in between.
    let ping = host.request("ping", json!({})).await.expect("ping after printing");
    assert_eq!(ping["result"], json!({}));
    assert_eq!(host.close().await.expect("exit"), 0);
}

#[tokio::test]
async fn malformed_line_gets_parse_error_and_stream_goes_on() {
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.send_line("{not json").await.expect("send");
    let reply = host.recv().await.expect("parse error reply");
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert_eq!(reply["id"], serde_json::Value::Null);
    host.initialize("2025-06-18").await.expect("initialize after a parse error");
    let result = host.call_tool("text_echo", json!({"text": "still here"})).await.expect("call");
    assert_eq!(first_text(&result), "still here");
    assert_eq!(host.close().await.expect("exit"), 0);
}

#[tokio::test]
async fn eof_on_stdin_exits_cleanly_with_code_zero() {
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    let reply = host.initialize("2024-11-05").await.expect("initialize");
    assert_eq!(reply["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(host.close().await.expect("exit"), 0);
}

#[tokio::test]
async fn a_client_that_never_drains_stderr_does_not_freeze_plugin_calls() {
    let plugins = PluginDir::new().add("fixture", &fixture_wasm("fixture"));
    // stderr is a pipe nobody reads: it fills after 64 KiB, and every plugin log record at
    // debug level is 16 KiB.
    let mut host = StdioHost::start_logging(plugins.path(), &[], "debug", std::process::Stdio::piped()).expect("start");
    let _undrained = host.take_stderr();
    host.initialize("2025-11-25").await.expect("initialize");
    for _ in 0..4 {
        let flood = host.call_tool("fixture_log_flood", json!({"count": 100, "bytes": 16_384})).await.expect("a call that logs 1.6 MB answers");
        assert_eq!(first_text(&flood), "logged", "{flood}");
    }
    let echo = host.call_tool("fixture_echo", json!({"text": "still answering"})).await.expect("call");
    assert_eq!(first_text(&echo), "still answering");
    assert_eq!(host.request("ping", json!({})).await.expect("ping")["result"], json!({}));
}

#[tokio::test]
async fn eof_ends_the_process_even_when_stdout_is_not_drained() {
    let plugins = PluginDir::new().add("fixture", &fixture_wasm("fixture"));
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");
    // 100 results of 1 MiB each, and nobody reads them: the writer blocks on a full pipe.
    for id in 0..100 {
        let call =
            json!({"jsonrpc": "2.0", "id": 1000 + id, "method": "tools/call", "params": {"name": "fixture_big_output", "arguments": {"bytes": 1_000_000}}});
        host.send_line(&call.to_string()).await.expect("send");
    }
    let started = std::time::Instant::now();
    let code = host.close_within(std::time::Duration::from_secs(30)).await.expect("exited");
    assert_eq!(code, 0);
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "exit took {:?}", started.elapsed());
}

/// Runs `tool` on the fixture with `log` as `RUST_LOG` and `extra` arguments, then returns the
/// whole of stderr once the host has exited.
async fn stderr_of(tool: &str, arguments: serde_json::Value, log: &str, extra: &[&str], grant: &str) -> String {
    use tokio::io::AsyncReadExt;
    let plugins = PluginDir::new().add("fixture", &fixture_wasm("fixture")).write("fixture.toml", grant);
    let mut host = StdioHost::start_logging(plugins.path(), extra, log, std::process::Stdio::piped()).expect("start");
    let mut stderr = host.take_stderr().expect("piped stderr");
    let reader = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    host.initialize("2025-11-25").await.expect("initialize");
    let _ = host.call_tool(tool, arguments).await.expect("call");
    assert_eq!(host.close().await.expect("exit"), 0);
    tokio::time::timeout(paddock_tests::WAIT, reader).await.expect("stderr closed").expect("reader")
}

#[tokio::test]
async fn plugin_text_cannot_forge_log_records_or_reach_the_terminal() {
    let log = stderr_of("fixture_log_forge", json!({}), "debug", &[], "").await;
    assert!(log.contains("victim"), "the plugin's text was logged (escaped): {log}");
    assert!(log.contains("tool call failed"), "the failure reason was logged (escaped): {log}");
    for line in log.lines() {
        assert!(!line.starts_with("2026-01-01T00:00:00.000000Z"), "a forged record: {line:?}");
        assert!(!line.starts_with("WARN forged"), "a forged record: {line:?}");
    }
    assert!(!log.contains('\u{1b}') && !log.contains('\u{7}'), "raw terminal control characters reached stderr");
}

#[tokio::test]
async fn json_logs_record_refusals_with_the_plugin_named() {
    let log = stderr_of("fixture_big_output", json!({"bytes": 10_000}), "warn", &["--log-format", "json"], "limits = { output = \"1KiB\" }\n").await;
    let records: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON record ({e}): {l:?}"))).collect();
    let refusal = records.iter().find(|r| r["kind"] == "output").unwrap_or_else(|| panic!("no output refusal among {records:#?}"));
    assert_eq!(refusal["plugin"], "fixture");
    assert_eq!(refusal["operation"], "big_output");
    assert_eq!(refusal["level"], "WARN");
}

#[tokio::test]
async fn json_logs_record_a_file_refusal_with_the_plugin_named() {
    let data = tempfile::tempdir().expect("data dir");
    let grant = format!("files = [{{ host = {:?}, guest = \"/data\", mode = \"rw\" }}]\n", data.path());
    let log = stderr_of("fixture_read", json!({"path": "/data/../../etc/passwd"}), "warn", &["--log-format", "json"], &grant).await;
    let records: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON record ({e}): {l:?}"))).collect();
    let refusal = records.iter().find(|r| r["kind"] == "file").unwrap_or_else(|| panic!("no file refusal among {records:#?}"));
    assert_eq!(refusal["plugin"], "fixture");
    assert_eq!(refusal["operation"], "read");
    assert_eq!(refusal["attempt"], "open-at /data/../../etc/passwd");
    assert_eq!(refusal["level"], "WARN");
}

/// The lines a client sends to initialize and call `text_echo` once.
fn scripted_session(text: &str) -> String {
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "text_echo", "arguments": {"text": text}}}),
    ]
    .iter()
    .map(|m| format!("{m}\n"))
    .collect()
}

/// Runs `paddock serve` over `stdin` to EOF and returns its stdout lines and exit code.
async fn serve_to_eof(dir: &std::path::Path, stdin: std::process::Stdio) -> (Vec<serde_json::Value>, i32) {
    let child = tokio::process::Command::new(paddock_bin())
        .arg("serve")
        .arg(dir)
        .env("PADDOCK_CACHE_DIR", test_cache_dir())
        .stdin(stdin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output()).await.expect("exits").expect("output");
    let lines = String::from_utf8(output.stdout).expect("utf-8").lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    (lines, output.status.code().unwrap_or(-1))
}

#[tokio::test]
async fn requests_from_a_regular_file_on_stdin_are_answered() {
    // A regular file cannot be polled by the reactor: this is the blocking-thread path.
    let plugins = PluginDir::new().add("text", &sample_wasm("text")).write("input.jsonl", scripted_session("from a file"));
    let input = std::fs::File::open(plugins.path().join("input.jsonl")).expect("open");
    let (lines, code) = serve_to_eof(plugins.path(), input.into()).await;
    assert_eq!(code, 0);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(first_text(&lines[1]["result"]), "from a file", "{lines:?}");
}

#[tokio::test]
async fn a_pipe_on_stdin_is_served_and_left_blocking_as_it_was_found() {
    use std::io::Write;
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let (reader, mut writer) = std::io::pipe().expect("pipe");
    // The test keeps its own handle on the same open pipe to read its flags after the exit.
    let watched = reader.try_clone().expect("dup");
    writer.write_all(scripted_session("from a pipe").as_bytes()).expect("write");
    drop(writer);
    let (lines, code) = serve_to_eof(plugins.path(), reader.into()).await;
    assert_eq!(code, 0);
    assert_eq!(first_text(&lines[1]["result"]), "from a pipe", "{lines:?}");
    let flags = rustix::fs::fcntl_getfl(&watched).expect("flags");
    assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK), "stdin was left non-blocking: {flags:?}");
}

/// Minor page faults of process `pid` so far (`/proc/PID/stat`, field 10).
fn minor_faults(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // The command name may hold spaces; the fields after it are counted from its `)`.
    let fields: Vec<&str> = stat[stat.rfind(')').expect("comm") + 2..].split(' ').collect();
    fields[7].parse().expect("minflt")
}

async fn echo_large(host: &mut StdioHost, text: &str) {
    let result = host.call_tool("text_echo", json!({"text": text})).await.expect("call");
    assert_eq!(first_text(&result).len(), text.len());
}

#[tokio::test]
async fn a_large_call_reuses_the_hosts_memory_instead_of_faulting_it_in_again() {
    let plugins = PluginDir::new().add("text", &sample_wasm("text")).write("paddock.toml", "[plugins.text]\nlimits = { output = \"4MiB\" }\n");
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");
    let text = "abcdefghijklmnopqrstuvwxyz".repeat(40_330);
    for _ in 0..3 {
        echo_large(&mut host, &text).await;
    }
    let before = minor_faults(host.pid());
    for _ in 0..5 {
        echo_large(&mut host, &text).await;
    }
    let per_call = (minor_faults(host.pid()) - before) / 5;
    // The guest's fresh instance faults in what its memory grows by, about a megabyte (280
    // faults in all, measured). Blocks the host freed from the heap and mapped again on every
    // call added 700-900 more.
    assert!(per_call < 600, "{per_call} page faults per 1 MiB echo");
    assert_eq!(host.close().await.expect("exit"), 0);
}

#[tokio::test]
async fn a_plugin_is_told_the_principal_it_serves() {
    let plugins = PluginDir::new().add("fixture", &fixture_wasm("fixture"));
    let mut host = StdioHost::start(plugins.path(), &["--principal", "alice"]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");
    let result = host.call_tool("fixture_context", json!({})).await.expect("call");
    let seen: serde_json::Value = serde_json::from_str(first_text(&result)).expect("the context as JSON");
    assert_eq!(seen["caller"], "local alice", "{seen}");
}
