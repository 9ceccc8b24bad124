//! The start-up section: Paddock serving N distinct plugins over stdio, started cold (a fresh,
//! empty compiled-plugin cache), then warm (the same cache again), then warm again.
//!
//! The host records what it learnt about a file it read (a plugin's digest, an artifact that
//! passed its MAC) only once the file is two seconds old (`cache::known_files` in the host), and
//! a start that finds such a record does not read the file again. So:
//! - the folders are made once, before the first round; the cold start records each plugin
//!   file's digest only if the file was already settled: true of a real plugins folder and of
//!   every round of a full run, but not of the first round of `--only startup`;
//! - a file read before it settled is read again in the background once it has, which records
//!   it: the cold start's server is kept running until its cache folder holds a record for
//!   every plugin file and every artifact ([`RECORDS_WAIT`] at most), as a server that goes on
//!   serving would;
//! - the warm start, the first after a compile, begins once the artifacts are settled
//!   ([`SETTLED`]) and finds those records; the warm-again start is any later start of an
//!   unchanged folder. Neither reads a plugin or an artifact in full.
//!
//! Each plugin is a copy of one sample component made distinct by a WebAssembly custom section
//! appended at its end (name `paddock-bench`, payload the copy's index), so its content hash
//! differs and each really compiles; `paddock.toml` gives copy `p<i>` the tool prefix `p<i>`.
//! Per start: the time from spawn to the `initialize` reply, peak RSS (`VmHWM`) at that moment,
//! the `tools/list` round trip (every page), idle RSS (`VmRSS` after 200 ms idle) and its
//! anonymous part (`RssAnon`: the rest is file pages shared with the page cache), and the
//! progress lines (`compiling plugins: N of M ready…`) on stderr. `tools/list` must show a tool of every copy, so a copy
//! Paddock did not serve fails the run. native-echo's spawn-to-`initialize` is the reference.
//!
//! Beside the copies, the folder holds the `text` sample, whose `text_echo` is then called
//! sequentially ([`CALLS`] times after a warm-up): the cost of a call with N plugins loaded,
//! which should not depend on N. native-echo answers the same calls for reference.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde_json::Value;

use crate::measure::{anon_rss_mb, millis, peak_rss_mb, rss_mb};
use crate::process::WAIT;
use crate::stdio::StdioServer;

/// How old the host wants a file before it records what it read in it (`SETTLED` in the host's
/// `cache::known_files`), with a margin.
const SETTLED: Duration = Duration::from_millis(2_100);
/// How long a cold start's server is given to record every file it read (in the background,
/// once the files settled).
const RECORDS_WAIT: Duration = Duration::from_secs(30);

/// How long a server is left idle before its idle RSS is read.
const SETTLE: Duration = Duration::from_millis(200);

/// Sequential `text_echo` calls timed after each start (after `stdio::WARM_UP_CALLS`).
const CALLS: usize = 500;

/// The name of the custom section that makes each copy distinct.
const SECTION_NAME: &str = "paddock-bench";

/// The figures of one start.
#[derive(Debug, Clone, Default)]
pub struct StartFigures {
    pub init_ms: f64,
    pub peak_rss_mb: f64,
    pub list_ms: f64,
    pub idle_rss_mb: f64,
    /// The anonymous part of `idle_rss_mb`.
    pub idle_anon_mb: f64,
    /// Sequential `text_echo` calls after the start: p50 latency and server CPU per call.
    pub call_p50_us: f64,
    pub call_cpu_us: f64,
    /// Progress lines on stderr: Paddock's `compiling plugins: N of M ready…`, logged every
    /// second once compiling has taken more than one (not the `plugin loaded … cache=Compiled`
    /// record every compiled plugin gets).
    pub progress_lines: usize,
    /// Seconds from the `initialize` reply to the end of the start's measurements.
    pub since_reply_s: f64,
}

/// Paddock's three starts on one folder and one cache.
#[derive(Debug, Clone, Default)]
pub struct CacheStarts {
    /// A fresh, empty cache: every plugin compiled.
    pub cold: StartFigures,
    /// The first start after the compile: every artifact verified in full.
    pub warm: StartFigures,
    /// Any later start: artifacts and plugin files taken on their records.
    pub warm_again: StartFigures,
}

/// The figures of one start-up round: native's reference start, then per plugin count Paddock's
/// three starts.
#[derive(Debug, Clone, Default)]
pub struct StartupFigures {
    pub native: StartFigures,
    /// Per plugin count, in the order asked.
    pub paddock: Vec<CacheStarts>,
}

/// Appends `value` as unsigned LEB128.
fn leb128_u32(mut value: u32, out: &mut Vec<u8>) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// `wasm` with a custom section named [`SECTION_NAME`] appended, holding `index` (then `padding`
/// zero bytes).
pub fn distinct_copy(wasm: &[u8], index: usize, padding: usize) -> Vec<u8> {
    let payload = index.to_string();
    let mut contents = Vec::new();
    leb128_u32(SECTION_NAME.len() as u32, &mut contents);
    contents.extend_from_slice(SECTION_NAME.as_bytes());
    contents.extend_from_slice(payload.as_bytes());
    contents.resize(contents.len() + padding, 0);
    let mut copy = wasm.to_vec();
    copy.push(0x00); // custom section id
    leb128_u32(contents.len() as u32, &mut copy);
    copy.extend_from_slice(&contents);
    copy
}

/// A temporary plugins folder of `count` distinct copies of `template` (`p0.wasm`…, each with
/// `padding` more bytes), each exposed with its own prefix by `paddock.toml`, and `text` (the
/// `text` sample, serving `text_echo`).
pub fn plugin_folder(template: &[u8], count: usize, text: &[u8], padding: usize) -> Result<tempfile::TempDir> {
    let folder = tempfile::Builder::new().prefix("paddock-bench-plugins-").tempdir()?;
    std::fs::write(folder.path().join("text.wasm"), text)?;
    let mut config = String::new();
    for index in 0..count {
        std::fs::write(folder.path().join(format!("p{index}.wasm")), distinct_copy(template, index, padding))?;
        config.push_str(&format!("[plugins.p{index}]\nexpose = {{ prefix = \"p{index}\" }}\n"));
    }
    std::fs::write(folder.path().join("paddock.toml"), config)?;
    Ok(folder)
}

/// Every tool name `tools/list` gives, page after page; the server must answer within `WAIT`.
fn list_tools(server: &mut StdioServer) -> Result<Vec<String>> {
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 1_000_000.. {
        let params = match &cursor {
            Some(cursor) => serde_json::json!({"cursor": cursor}),
            None => serde_json::json!({}),
        };
        let request = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params});
        let reply: Value = serde_json::from_str(server.request(&request.to_string())?)?;
        let tools = reply.pointer("/result/tools").and_then(Value::as_array).context("tools/list returned no tools array")?;
        names.extend(tools.iter().filter_map(|tool| tool.get("name")?.as_str().map(str::to_owned)));
        cursor = reply.pointer("/result/nextCursor").and_then(Value::as_str).map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    Ok(names)
}

/// The records (`*.known`) in a cache folder.
fn records(cache: &Path) -> usize {
    std::fs::read_dir(cache).map(|entries| entries.flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".known")).count()).unwrap_or(0)
}

/// One start of `command`; with `plugins`, every copy `p0`…`p<plugins-1>` must be served. With
/// `records`, the server is stopped only once that cache folder holds that many records.
fn start(command: &[String], plugins: Option<usize>, records_in: Option<(&Path, usize)>) -> Result<StartFigures> {
    // A cold start compiles every plugin: allow for it beyond the usual wait.
    let limit = WAIT + Duration::from_secs(2) * plugins.unwrap_or(0) as u32;
    let (mut server, init) = StdioServer::start(command, limit)?;
    let replied = Instant::now();
    let mut figures = StartFigures { init_ms: millis(init), peak_rss_mb: peak_rss_mb(server.pid())?, ..StartFigures::default() };
    let listed = Instant::now();
    let names = list_tools(&mut server)?;
    figures.list_ms = millis(listed.elapsed());
    if let Some(count) = plugins {
        let missing: Vec<String> = (0..count).map(|index| format!("p{index}_")).filter(|prefix| !names.iter().any(|name| name.starts_with(prefix))).collect();
        ensure!(
            missing.is_empty(),
            "{} of {count} plugins are not served (no tool starts with {}); the server's stderr ends:\n{}",
            missing.len(),
            missing.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
            server.stderr().tail()
        );
    }
    std::thread::sleep(SETTLE);
    figures.idle_rss_mb = rss_mb(server.pid())?;
    figures.idle_anon_mb = anon_rss_mb(server.pid())?;
    let calls = crate::stdio::sequential(&mut server, crate::stdio::ECHO_TOOL, CALLS, 2_000_000).context("`text_echo` calls after the start")?;
    (figures.call_p50_us, figures.call_cpu_us) = (calls.p50_us, calls.cpu_per_call_us);
    figures.progress_lines = server.stderr().count_containing("compiling plugins: ");
    if let Some((cache, expected)) = records_in {
        let deadline = Instant::now() + RECORDS_WAIT;
        while records(cache) < expected {
            ensure!(Instant::now() < deadline, "the cold start recorded {} of {expected} files within {RECORDS_WAIT:?}", records(cache));
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    server.stop()?;
    figures.since_reply_s = replied.elapsed().as_secs_f64();
    Ok(figures)
}

/// One start-up round: native's reference, then per entry of `counts` Paddock's cold, warm and
/// warm-again starts (`paddock serve FOLDER --cache-dir CACHE`) on its folder from `folders`.
pub fn round(paddock: &Path, native: &[String], folders: &[(usize, tempfile::TempDir)]) -> Result<StartupFigures> {
    let mut figures = StartupFigures { native: start(native, None, None).context("native-echo start")?, paddock: Vec::new() };
    for (count, folder) in folders {
        let cache = tempfile::Builder::new().prefix("paddock-bench-cache-").tempdir()?;
        let command =
            [paddock.display().to_string(), "serve".into(), folder.path().display().to_string(), "--cache-dir".into(), cache.path().display().to_string()];
        // A digest record and an artifact record for each copy and for `text.wasm`.
        let cold = start(&command, Some(*count), Some((cache.path(), 2 * (count + 1)))).with_context(|| format!("cold start with {count} plugins"))?;
        // The cold start wrote its artifacts before its `initialize` reply.
        let compiled = Instant::now() - Duration::from_secs_f64(cold.since_reply_s);
        std::thread::sleep(SETTLED.saturating_sub(compiled.elapsed()));
        let warm = start(&command, Some(*count), None).with_context(|| format!("warm start with {count} plugins"))?;
        let warm_again = start(&command, Some(*count), None).with_context(|| format!("second warm start with {count} plugins"))?;
        figures.paddock.push(CacheStarts { cold, warm, warm_again });
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128_is_seven_bits_a_byte_low_first() {
        for (value, expected) in
            [(0u32, vec![0x00]), (127, vec![0x7f]), (128, vec![0x80, 0x01]), (300, vec![0xac, 0x02]), (u32::MAX, vec![0xff, 0xff, 0xff, 0xff, 0x0f])]
        {
            let mut out = Vec::new();
            leb128_u32(value, &mut out);
            assert_eq!(out, expected, "{value}");
        }
    }

    #[test]
    fn a_copy_is_the_same_component_with_one_more_custom_section() {
        let template = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../sample-plugins/dist/fetch.wasm"));
        let Ok(template) = template else {
            assert!(std::env::var("CI").is_err(), "sample-plugins/dist/fetch.wasm is missing; run scripts/build-plugins");
            eprintln!("skipped: sample-plugins/dist/fetch.wasm is missing; run scripts/build-plugins");
            return;
        };
        let copy = distinct_copy(&template, 42, 0);
        assert_ne!(copy, distinct_copy(&template, 43, 0));
        assert_eq!(distinct_copy(&template, 42, 1000).len(), copy.len() + 1000 + 1, "the section's size takes a second byte");
        let mut sections = Vec::new();
        for payload in wasmparser::Parser::new(0).parse_all(&copy) {
            if let wasmparser::Payload::CustomSection(reader) = payload.expect("the copy parses") {
                sections.push((reader.name().to_owned(), reader.data().to_vec()));
            }
        }
        assert_eq!(sections.last(), Some(&(SECTION_NAME.to_owned(), b"42".to_vec())));
        wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all()).validate_all(&copy).expect("the copy is valid");
    }
}
