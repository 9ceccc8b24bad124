//! The live-folder section (Paddock alone: a native server has no folder): over stdio, a folder
//! serving `text` and the `versioned` test plugin as `v.wasm`.
//!
//! - Replace to callable: a new version of `v.wasm` is written beside the folder and renamed
//!   in; the time until `notifications/tools/list_changed` arrives and a `tools/call v_version`
//!   answers with the new version. Measured with the new version already compiled (two versions
//!   alternate after a warm-up) and with a version never seen (compiled on the way).
//! - A call's cost during reloads: sequential `text_echo` calls, first with the folder quiet,
//!   then while another thread replaces `v.wasm` every `RELOAD_EVERY`: p50, p99 and max of each.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};

use crate::measure::{micros, millis, p50_p99};
use crate::process::WAIT;
use crate::stdio::{StdioServer, echo_call};

/// How often `v.wasm` is replaced while the calls run: longer than the folder's settle time
/// (300 ms), so each replacement is loaded and swapped in while the calls go on.
pub const RELOAD_EVERY: Duration = Duration::from_millis(500);
/// The bytes in the `versioned` plugin that name its version (`v` and six digits after them).
const MARKER: &[u8] = b"paddock-versioned:v000001";

/// One round's figures.
#[derive(Debug, Clone, Default)]
pub struct LiveFigures {
    pub replace_cached_ms: f64,
    pub replace_compiled_ms: f64,
    pub quiet_p50_us: f64,
    pub quiet_p99_us: f64,
    pub quiet_max_us: f64,
    pub reloading_p50_us: f64,
    pub reloading_p99_us: f64,
    pub reloading_max_us: f64,
    /// Replacements swapped in while the calls ran (list changes heard).
    pub reloads: usize,
}

/// The `versioned` plugin as version `version`.
fn version_bytes(template: &[u8], version: u32) -> Result<Vec<u8>> {
    let at = template.windows(MARKER.len()).position(|w| w == MARKER).context("the versioned plugin has no version marker")?;
    let mut bytes = template.to_vec();
    bytes[at..at + MARKER.len()].copy_from_slice(format!("paddock-versioned:v{version:06}").as_bytes());
    Ok(bytes)
}

/// Writes `bytes` beside the folder's `v.wasm` and renames it in.
fn replace(folder: &Path, bytes: &[u8]) -> Result<()> {
    let part = folder.join(".v.wasm.part");
    std::fs::write(&part, bytes)?;
    std::fs::rename(&part, folder.join("v.wasm"))?;
    Ok(())
}

fn version_call(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"v_version","arguments":{{}}}}}}"#)
}

/// Renames version `version` in and waits for the list change and the new version's answer.
fn replace_to_callable(server: &mut StdioServer, folder: &Path, template: &[u8], version: u32, id: usize) -> Result<f64> {
    let bytes = version_bytes(template, version)?;
    let started = Instant::now();
    replace(folder, &bytes)?;
    loop {
        if server.receive()?.contains("notifications/tools/list_changed") {
            break;
        }
    }
    let reply = server.request(&version_call(id))?;
    let elapsed = millis(started.elapsed());
    ensure!(reply.contains(&format!("v{version:06}")), "the new version did not answer: {}", reply.chars().take(300).collect::<String>());
    Ok(elapsed)
}

/// Sequential echo calls for `window`; the latencies in µs and the list changes heard in between.
fn echo_calls(server: &mut StdioServer, window: Duration, first_id: usize) -> Result<(Vec<f64>, usize)> {
    let mut latencies = Vec::new();
    let mut changes = 0;
    let began = Instant::now();
    let mut id = first_id;
    while began.elapsed() < window {
        let started = Instant::now();
        server.send(&echo_call(id))?;
        let wanted = format!("\"id\":{id}");
        loop {
            let line = server.receive()?;
            if line.contains(&wanted) {
                ensure!(line.contains("\"result\""), "a call failed during reloads: {}", line.chars().take(300).collect::<String>());
                break;
            }
            if line.contains("notifications/tools/list_changed") {
                changes += 1;
            }
        }
        latencies.push(micros(started.elapsed()));
        id += 1;
    }
    Ok((latencies, changes))
}

/// A folder with `text` and version 1 of `versioned`.
pub fn plugin_folder(text_wasm: &Path, versioned_wasm: &Path) -> Result<tempfile::TempDir> {
    let folder = tempfile::Builder::new().prefix("paddock-bench-live-").tempdir()?;
    std::fs::copy(text_wasm, folder.path().join("text.wasm"))?;
    let template = std::fs::read(versioned_wasm).with_context(|| format!("read {}", versioned_wasm.display()))?;
    std::fs::write(folder.path().join("v.wasm"), version_bytes(&template, 1)?)?;
    Ok(folder)
}

/// One round: `replacements` timed replacements of each kind, then calls for `window` with the
/// folder quiet and for `window` while `v.wasm` is replaced every `RELOAD_EVERY`.
pub fn round(paddock: &Path, folder: &Path, versioned_wasm: &Path, replacements: usize, window: Duration, round: u32) -> Result<LiveFigures> {
    let template = std::fs::read(versioned_wasm)?;
    // Every round starts from version 1, whatever the last one left.
    std::fs::write(folder.join("v.wasm"), version_bytes(&template, 1)?)?;
    let command: Vec<String> = vec![paddock.display().to_string(), "serve".into(), folder.display().to_string()];
    let (mut server, _) = StdioServer::start(&command, WAIT)?;
    let mut id = 1;
    // Versions 2 and 3 compiled once, then alternated: the cached case.
    for version in [2, 3] {
        replace_to_callable(&mut server, folder, &template, version, id)?;
        id += 1;
    }
    let mut cached = Vec::new();
    for i in 0..replacements {
        cached.push(replace_to_callable(&mut server, folder, &template, 2 + (i % 2) as u32, id)?);
        id += 1;
    }
    // Versions no run has used: compiled on the way.
    let mut compiled = Vec::new();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let fresh_base = 100_000 + (now % 8_000) as u32 * 100 + round * 10;
    for i in 0..replacements {
        compiled.push(replace_to_callable(&mut server, folder, &template, fresh_base + i as u32, id)?);
        id += 1;
    }
    let (mut quiet, _) = echo_calls(&mut server, window, 1_000_000)?;

    let stop = Arc::new(AtomicBool::new(false));
    let reloader = std::thread::spawn({
        let (stop, folder, template) = (Arc::clone(&stop), PathBuf::from(folder), template.clone());
        move || -> Result<()> {
            // The last timed replacement left an odd or even version: start from the other.
            let mut version = 2;
            while !stop.load(Ordering::Relaxed) {
                version = if version == 2 { 3 } else { 2 };
                replace(&folder, &version_bytes(&template, version)?)?;
                std::thread::sleep(RELOAD_EVERY);
            }
            Ok(())
        }
    });
    let reloading = echo_calls(&mut server, window, 2_000_000);
    stop.store(true, Ordering::Relaxed);
    reloader.join().map_err(|_| anyhow::anyhow!("the reloader panicked"))??;
    let (mut reloading, reloads) = reloading?;
    server.stop()?;

    let median = |values: &mut Vec<f64>| p50_p99(values).0;
    let max = |values: &[f64]| values.iter().copied().fold(0.0, f64::max);
    let (quiet_max_us, reloading_max_us) = (max(&quiet), max(&reloading));
    let (quiet_p50_us, quiet_p99_us) = p50_p99(&mut quiet);
    let (reloading_p50_us, reloading_p99_us) = p50_p99(&mut reloading);
    Ok(LiveFigures {
        replace_cached_ms: median(&mut cached),
        replace_compiled_ms: median(&mut compiled),
        quiet_p50_us,
        quiet_p99_us,
        quiet_max_us,
        reloading_p50_us,
        reloading_p99_us,
        reloading_max_us,
        reloads,
    })
}
