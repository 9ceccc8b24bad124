//! The external HTTP load client: `wrk` (the Debian package), bound to a core of its own, with a
//! Lua script that writes the MCP request. A C client with one thread drives far more requests
//! per CPU second than the harness's own, so the server, not the client, is what is measured;
//! its CPU is read as well, and a run where it used nearly all of its core is marked as the
//! client's limit.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

use crate::machine;

/// One run of `wrk`.
#[derive(Debug, Clone, Default)]
pub struct WrkRun {
    pub requests: u64,
    pub requests_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// The client's CPU over the run, in CPUs (1.0: its core was never idle).
    pub client_cpu: f64,
}

/// `wrk` on `PATH` (or `explicit`).
pub fn find(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        ensure!(path.exists(), "{} does not exist", path.display());
        return Ok(path.to_owned());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("wrk"))
        .find(|candidate| candidate.is_file())
        .context("the HTTP section needs `wrk` (Debian package `wrk`; scripts/test installs it)")
}

/// Runs `wrk` with one thread and `connections` connections against `url` for `seconds`, with
/// `script` (Lua), on `core`.
pub fn run(wrk: &Path, url: &str, script: &str, connections: usize, seconds: u64, core: usize) -> Result<WrkRun> {
    let mut file = tempfile::Builder::new().suffix(".lua").tempfile()?;
    std::io::Write::write_all(&mut file, script.as_bytes())?;
    let started = Instant::now();
    let mut child = machine::on_core(core, || {
        Command::new(wrk)
            .args(["-t1", &format!("-c{connections}"), &format!("-d{seconds}s"), "--latency", "-s"])
            .arg(file.path())
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("start {}", wrk.display()))
    })?;
    let pid = child.id();
    // `wrk` stops by itself after `seconds`; one that does not is killed.
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let done = Arc::clone(&done);
        let limit = Duration::from_secs(seconds + 30);
        std::thread::spawn(move || {
            let deadline = Instant::now() + limit;
            while !done.load(Ordering::Acquire) {
                if Instant::now() > deadline {
                    let _ = rustix::process::kill_process(rustix::process::Pid::from_raw(pid as i32).expect("a child's pid"), rustix::process::Signal::KILL);
                    return;
                }
                std::thread::park_timeout(Duration::from_millis(200));
            }
        })
    };
    let mut out = String::new();
    child.stdout.take().context("wrk's stdout")?.read_to_string(&mut out)?;
    let mut err = String::new();
    child.stderr.take().context("wrk's stderr")?.read_to_string(&mut err)?;
    // Exited but not reaped: its CPU totals are still in /proc.
    rustix::process::waitid(
        rustix::process::WaitId::Pid(rustix::process::Pid::from_raw(pid as i32).context("wrk's pid")?),
        rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT,
    )?;
    let client_seconds = machine::process_cpu_seconds(pid).unwrap_or(0.0);
    let wall = started.elapsed().as_secs_f64();
    let status = child.wait()?;
    done.store(true, Ordering::Release);
    watchdog.thread().unpark();
    let _ = watchdog.join();
    ensure!(status.success(), "wrk failed ({status}): {}{}", out, err);
    let mut run = parse(&out).with_context(|| format!("wrk's report:\n{out}{err}"))?;
    run.client_cpu = client_seconds / wall;
    Ok(run)
}

/// Reads `wrk --latency`'s report; a response that was not 2xx, or a socket error, fails it.
fn parse(report: &str) -> Result<WrkRun> {
    let mut run = WrkRun::default();
    for line in report.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("Requests/sec:") {
            run.requests_per_s = rest.trim().parse()?;
        } else if let Some(rest) = line.strip_prefix("50%") {
            run.p50_us = duration_us(rest.trim())?;
        } else if let Some(rest) = line.strip_prefix("99%") {
            run.p99_us = duration_us(rest.trim())?;
        } else if let Some((count, _)) = line.split_once(" requests in ") {
            run.requests = count.trim().parse()?;
        } else if line.starts_with("Non-2xx or 3xx responses:") {
            bail!("some responses were not 2xx: {line}");
        } else if let Some(rest) = line.strip_prefix("Socket errors:") {
            let errors: u64 = rest.split(',').filter_map(|part| part.split_whitespace().last()?.parse::<u64>().ok()).sum();
            ensure!(errors == 0, "socket errors: {rest}");
        }
    }
    ensure!(run.requests > 0 && run.requests_per_s > 0.0, "no request completed");
    Ok(run)
}

/// `2.49ms`, `386.14us`, `1.02s` in microseconds.
fn duration_us(text: &str) -> Result<f64> {
    let split = text.find(|c: char| c.is_ascii_alphabetic()).context("a duration without a unit")?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse()?;
    Ok(match unit {
        "us" => number,
        "ms" => number * 1e3,
        "s" => number * 1e6,
        "m" => number * 60e6,
        other => bail!("unknown unit `{other}`"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "Running 5s test @ http://127.0.0.1:18123/mcp
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.53ms  386.14us   7.02ms   89.50%
    Req/Sec    25.33k     1.20k   27.00k    80.00%
  Latency Distribution
     50%  780.00us
     75%    2.61ms
     90%    2.80ms
     99%    3.91ms
  126096 requests in 5.00s, 33.79MB read
Requests/sec:  25191.26
Transfer/sec:      6.75MB
";

    #[test]
    fn a_report_gives_its_rate_count_and_percentiles() {
        let run = parse(REPORT).expect("parses");
        assert_eq!(run.requests, 126_096);
        assert!((run.requests_per_s - 25191.26).abs() < 1e-6);
        assert!((run.p50_us - 780.0).abs() < 1e-6);
        assert!((run.p99_us - 3910.0).abs() < 1e-6);
    }

    #[test]
    fn a_response_that_is_not_2xx_or_a_socket_error_fails_the_run() {
        let failed = REPORT.replace("Requests/sec", "  Non-2xx or 3xx responses: 5\nRequests/sec");
        assert!(parse(&failed).is_err());
        let timeouts = REPORT.replace("Requests/sec", "  Socket errors: connect 0, read 0, write 0, timeout 3\nRequests/sec");
        assert!(parse(&timeouts).is_err());
        let none = REPORT.replace("Requests/sec", "  Socket errors: connect 0, read 0, write 0, timeout 0\nRequests/sec");
        assert!(parse(&none).is_ok());
    }
}
