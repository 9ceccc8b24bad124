//! `paddock-bench`: Paddock and a native JSON-RPC echo server (`native-echo`, no sandbox) run the
//! same stdio workload side by side, in interleaved rounds; the report gives the median of each
//! figure for both, their ratio, and the machine's load beside them.
//!
//! Per round and server: time to the `initialize` reply; sequential `tools/call` latency (p50,
//! p99); pipelined calls per second with 1, 8, 64 and 256 requests in flight; server CPU per
//! call (every thread's time on CPU, from `/proc/PID/task/*/schedstat`, over the sequential
//! phase); peak RSS (`VmHWM`). The tool is `text_echo` from the `text` sample plugin.
//!
//! `--quick` runs one short round: CI uses it so the harness cannot rot, and asserts nothing
//! about the figures.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;

/// Benchmarks Paddock beside a native echo server.
#[derive(Debug, Parser)]
struct Args {
    /// The `paddock` binary.
    #[arg(long, default_value = "target/release/paddock")]
    paddock: PathBuf,
    /// A plugins folder serving `text_echo` (the `text` sample plugin).
    #[arg(long, default_value = "sample-plugins/dist")]
    plugins: PathBuf,
    /// Interleaved rounds; medians are reported.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Sequential calls per round.
    #[arg(long, default_value_t = 2000)]
    calls: usize,
    /// One short round, for CI.
    #[arg(long)]
    quick: bool,
}

/// Pipeline depths measured.
const DEPTHS: [usize; 4] = [1, 8, 64, 256];

/// One server under test.
struct Target {
    name: &'static str,
    command: Vec<String>,
}

/// The figures of one round of one server.
#[derive(Debug, Clone, Default)]
struct Figures {
    init_ms: f64,
    seq_p50_us: f64,
    seq_p99_us: f64,
    cpu_per_call_us: f64,
    pipelined: Vec<f64>,
    peak_rss_mb: f64,
}

/// A running server driven over its stdio.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Server {
    fn start(target: &Target) -> Result<(Server, Duration)> {
        let started = Instant::now();
        let mut child = Command::new(&target.command[0])
            .args(&target.command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("start {}", target.command.join(" ")))?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout")?);
        let mut server = Server { child, stdin, stdout, line: String::new() };
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"paddock-bench","version":"1"}}}"#;
        server.send(init)?;
        server.receive()?;
        let elapsed = started.elapsed();
        server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
        Ok((server, elapsed))
    }

    fn send(&mut self, line: &str) -> Result<()> {
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.write_all(b"\n")?;
        self.stdin.flush()?;
        Ok(())
    }

    fn receive(&mut self) -> Result<&str> {
        self.line.clear();
        if self.stdout.read_line(&mut self.line)? == 0 {
            bail!("the server closed stdout");
        }
        Ok(&self.line)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stop(mut self) -> Result<()> {
        drop(self.stdin);
        self.child.wait()?;
        Ok(())
    }
}

fn call(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"text_echo","arguments":{{"text":"hello"}}}}}}"#)
}

/// Nanoseconds every thread of `pid` has spent on a CPU.
fn cpu_ns(pid: u32) -> Result<u64> {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let stat = std::fs::read_to_string(task?.path().join("schedstat")).unwrap_or_default();
        total += stat.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
    }
    Ok(total)
}

/// The peak resident set of `pid`, in MB.
fn peak_rss_mb(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse::<f64>().ok());
    Ok(kb.unwrap_or(0.0) / 1024.0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    percentile(values, 0.5)
}

/// Calls per second with `depth` requests kept in flight.
fn pipelined(server: &mut Server, depth: usize, calls: usize, first_id: usize) -> Result<f64> {
    let started = Instant::now();
    let mut sent = 0;
    let mut received = 0;
    let mut batch = String::new();
    while received < calls {
        batch.clear();
        while sent < calls && sent - received < depth {
            batch.push_str(&call(first_id + sent));
            batch.push('\n');
            sent += 1;
        }
        if !batch.is_empty() {
            server.stdin.write_all(batch.as_bytes())?;
            server.stdin.flush()?;
        }
        let reply = server.receive()?;
        if !reply.contains("\"result\"") {
            bail!("a call failed: {reply}");
        }
        received += 1;
    }
    Ok(calls as f64 / started.elapsed().as_secs_f64())
}

fn round(target: &Target, calls: usize) -> Result<Figures> {
    let (mut server, init) = Server::start(target)?;
    let mut figures = Figures { init_ms: init.as_secs_f64() * 1000.0, ..Figures::default() };
    // Warm-up: the first calls fault in code and memory.
    for id in 1..=100 {
        server.send(&call(id))?;
        server.receive()?;
    }
    let cpu_before = cpu_ns(server.pid())?;
    let mut latencies = Vec::with_capacity(calls);
    for id in 0..calls {
        let started = Instant::now();
        server.send(&call(1000 + id))?;
        let reply = server.receive()?;
        latencies.push(started.elapsed().as_secs_f64() * 1e6);
        if !reply.contains("\"result\"") {
            bail!("{} failed a call: {reply}", target.name);
        }
    }
    figures.cpu_per_call_us = (cpu_ns(server.pid())? - cpu_before) as f64 / 1000.0 / calls as f64;
    latencies.sort_by(f64::total_cmp);
    figures.seq_p50_us = percentile(&latencies, 0.5);
    figures.seq_p99_us = percentile(&latencies, 0.99);
    let mut next_id = 1_000_000;
    for depth in DEPTHS {
        let total = (calls * 2).max(depth * 4);
        figures.pipelined.push(pipelined(&mut server, depth, total, next_id)?);
        next_id += total;
    }
    figures.peak_rss_mb = peak_rss_mb(server.pid())?;
    server.stop()?;
    Ok(figures)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").ok().and_then(|l| l.split_whitespace().next().map(str::to_owned)).unwrap_or_else(|| "?".into())
}

fn native_echo() -> Result<PathBuf> {
    let me = std::env::current_exe()?;
    let path = me.with_file_name("native-echo");
    if !path.exists() {
        bail!("{} is missing: build it with `cargo build --release -p paddock-bench`", path.display());
    }
    Ok(path)
}

fn main() -> Result<()> {
    let mut args = Args::parse();
    if args.quick {
        args.rounds = 1;
        args.calls = 200;
    }
    for (what, path) in [("paddock", &args.paddock), ("plugins folder", &args.plugins)] {
        if !Path::new(path).exists() {
            bail!("the {what} `{}` is missing: run scripts/build", path.display());
        }
    }
    let targets = [
        Target { name: "paddock", command: vec![args.paddock.display().to_string(), "serve".into(), args.plugins.display().to_string()] },
        Target { name: "native", command: vec![native_echo()?.display().to_string()] },
    ];
    let mut results: Vec<Vec<Figures>> = vec![Vec::new(), Vec::new()];
    let mut loads = Vec::new();
    for number in 0..args.rounds {
        loads.push(load());
        for (index, target) in targets.iter().enumerate() {
            let figures = round(target, args.calls).with_context(|| format!("round {} of {}", number + 1, target.name))?;
            results[index].push(figures);
        }
        eprintln!("paddock-bench: round {}/{} done", number + 1, args.rounds);
    }
    let pick = |index: usize, f: &dyn Fn(&Figures) -> f64| median(&mut results[index].iter().map(f).collect::<Vec<_>>());
    let mut rows: Vec<(String, f64, f64)> = vec![
        ("`initialize` reply (ms)".into(), pick(0, &|f| f.init_ms), pick(1, &|f| f.init_ms)),
        ("sequential `tools/call` p50 (µs)".into(), pick(0, &|f| f.seq_p50_us), pick(1, &|f| f.seq_p50_us)),
        ("sequential `tools/call` p99 (µs)".into(), pick(0, &|f| f.seq_p99_us), pick(1, &|f| f.seq_p99_us)),
        ("server CPU per call (µs)".into(), pick(0, &|f| f.cpu_per_call_us), pick(1, &|f| f.cpu_per_call_us)),
    ];
    for (i, depth) in DEPTHS.iter().enumerate() {
        rows.push((format!("pipelined calls/s, {depth} in flight"), pick(0, &|f| f.pipelined[i]), pick(1, &|f| f.pipelined[i])));
    }
    rows.push(("peak RSS (MB)".into(), pick(0, &|f| f.peak_rss_mb), pick(1, &|f| f.peak_rss_mb)));
    println!("stdio, `text_echo`: medians of {} interleaved round(s) of {} sequential calls; 1-minute load at each round: {}", args.rounds, args.calls, loads.join(", "));
    println!();
    println!("| figure | paddock | native | paddock / native |");
    println!("|---|---:|---:|---:|");
    for (name, paddock, native) in rows {
        let ratio = if native > 0.0 { paddock / native } else { 0.0 };
        println!("| {name} | {paddock:.1} | {native:.1} | {ratio:.2}× |");
    }
    Ok(())
}
