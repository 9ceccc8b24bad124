//! The stdio section, and the stdio client the start-up and 1 MiB sections reuse: time to the
//! `initialize` reply, sequential `tools/call` latency (p50, p99), server CPU per call over the
//! sequential phase, pipelined calls per second at several depths, and peak RSS. The sequential
//! figures are taken twice: where the scheduler puts client and server, and with both on one
//! core, where no call waits for an idle vCPU to wake.

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rustix::thread::{CpuSet, sched_getaffinity, sched_getcpu, sched_setaffinity};

use crate::measure::{cpu_ns, micros, millis, p50_p99, peak_rss_mb};
use crate::process::{Process, Progress, StderrLog, WAIT};

/// Pipeline depths measured.
pub const DEPTHS: [usize; 4] = [1, 8, 64, 256];

/// Sequential calls before any sequential figure is taken. The first calls fault in code and
/// memory, and on these VMs a ping-pong over a pipe takes several hundred round trips to
/// settle (an idle vCPU is expensive to wake until the host adapts): after 100 calls, native's
/// p50 was still 45 µs, against 8 µs after 500.
pub const WARM_UP_CALLS: usize = 1000;

/// The `initialize` request every stdio client sends first.
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"paddock-bench","version":"1"}}}"#;

/// The notification that follows the `initialize` reply.
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A `tools/call` of `text_echo` with `{"text":"hello"}`.
pub fn echo_call(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"text_echo","arguments":{{"text":"hello"}}}}}}"#)
}

/// One server under test: its name in the report and the command that serves stdio.
pub struct Target {
    pub name: &'static str,
    pub command: Vec<String>,
}

/// The figures of one stdio round of one server.
#[derive(Debug, Clone, Default)]
pub struct StdioFigures {
    pub init_ms: f64,
    /// Sequential calls where the scheduler places client and server.
    pub sequential: Sequential,
    /// Sequential calls with the client thread and every server thread on one core.
    pub one_core: Sequential,
    /// Calls per second at each of [`DEPTHS`].
    pub pipelined: Vec<f64>,
    pub peak_rss_mb: f64,
}

/// The figures of sequential calls: latency and the server's CPU time per call.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sequential {
    pub p50_us: f64,
    pub p99_us: f64,
    pub cpu_per_call_us: f64,
}

/// Times `calls` sequential `text_echo` calls (ids from `first_id`) after `WARM_UP_CALLS` to warm
/// up; the server's CPU time is read before and after.
pub fn sequential(server: &mut StdioServer, calls: usize, first_id: usize) -> Result<Sequential> {
    for id in first_id..first_id + WARM_UP_CALLS {
        server.request(&echo_call(id))?;
    }
    let first_id = first_id + WARM_UP_CALLS;
    let cpu_before = cpu_ns(server.pid())?;
    let mut latencies = Vec::with_capacity(calls);
    for id in first_id..first_id + calls {
        let started = Instant::now();
        server.request(&echo_call(id))?;
        latencies.push(micros(started.elapsed()));
    }
    let cpu_per_call_us = (cpu_ns(server.pid())? - cpu_before) as f64 / 1000.0 / calls.max(1) as f64;
    let (p50_us, p99_us) = p50_p99(&mut latencies);
    Ok(Sequential { p50_us, p99_us, cpu_per_call_us })
}

/// Runs `work` with this thread bound to the core it is on, then unbinds it. A process started
/// meanwhile keeps that one core for its whole life, every thread of it.
pub fn on_one_core<T>(work: impl FnOnce() -> Result<T>) -> Result<T> {
    let allowed = sched_getaffinity(None).context("read this thread's cores")?;
    let mut one = CpuSet::new();
    one.set(sched_getcpu());
    sched_setaffinity(None, &one).context("bind this thread to one core")?;
    let result = work();
    sched_setaffinity(None, &allowed).context("unbind this thread")?;
    result
}

/// A running server driven over its stdio; killed if it stays silent past its limit.
pub struct StdioServer {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
    progress: Progress,
    process: Process,
}

impl StdioServer {
    /// Spawns `command` and sends `initialize`; the server and the time from spawn to its reply.
    /// The server is killed if any single wait for it exceeds `limit`.
    pub fn start(command: &[String], limit: Duration) -> Result<(StdioServer, Duration)> {
        let started = Instant::now();
        let mut process = Process::spawn(command, true)?;
        let stdin = process.child().stdin.take().context("stdin")?;
        let stdout = BufReader::with_capacity(64 * 1024, process.child().stdout.take().context("stdout")?);
        let progress = process.watchdog(limit);
        let mut server = StdioServer { stdin, stdout, line: String::new(), progress, process };
        server.send(INITIALIZE)?;
        let reply = server.receive()?;
        if !reply.contains("\"result\"") {
            bail!("`initialize` failed: {reply}");
        }
        let elapsed = started.elapsed();
        server.send(INITIALIZED)?;
        Ok((server, elapsed))
    }

    /// Writes one message and a newline.
    pub fn send(&mut self, line: &str) -> Result<()> {
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.write_all(b"\n")?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Writes several messages, each ending in a newline, at once.
    pub fn send_batch(&mut self, lines: &str) -> Result<()> {
        self.stdin.write_all(lines.as_bytes())?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Reads one message.
    pub fn receive(&mut self) -> Result<&str> {
        self.line.clear();
        let read = self.stdout.read_line(&mut self.line);
        if self.progress.fired() {
            bail!("the server sent nothing for too long and was killed; its stderr ends:\n{}", self.process.stderr.tail());
        }
        if read? == 0 {
            bail!("the server closed stdout; its stderr ends:\n{}", self.process.stderr.tail());
        }
        self.progress.advance();
        Ok(&self.line)
    }

    /// Sends `line` and reads the reply, which must be a success.
    pub fn request(&mut self, line: &str) -> Result<&str> {
        self.send(line)?;
        let reply = self.receive()?;
        if !reply.contains("\"result\"") {
            bail!("a request failed: {}", reply.chars().take(500).collect::<String>());
        }
        Ok(reply)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> &StderrLog {
        &self.process.stderr
    }

    /// Closes stdin and waits for the server to exit.
    pub fn stop(self) -> Result<()> {
        let StdioServer { stdin, mut process, progress, .. } = self;
        drop(stdin);
        drop(progress);
        process.wait(WAIT)
    }
}

/// Calls per second with `depth` requests kept in flight.
pub fn pipelined(server: &mut StdioServer, depth: usize, calls: usize, first_id: usize) -> Result<f64> {
    let started = Instant::now();
    let mut sent = 0;
    let mut received = 0;
    let mut batch = String::new();
    while received < calls {
        batch.clear();
        while sent < calls && sent - received < depth {
            batch.push_str(&echo_call(first_id + sent));
            batch.push('\n');
            sent += 1;
        }
        if !batch.is_empty() {
            server.send_batch(&batch)?;
        }
        let reply = server.receive()?;
        if !reply.contains("\"result\"") {
            bail!("a call failed: {reply}");
        }
        received += 1;
    }
    Ok(calls as f64 / started.elapsed().as_secs_f64())
}

/// One stdio round of `target`: a server where the scheduler places it (start, sequential calls,
/// pipelined calls, peak RSS), then another on the bench's core for the sequential calls.
pub fn round(target: &Target, calls: usize) -> Result<StdioFigures> {
    let (mut server, init) = StdioServer::start(&target.command, WAIT)?;
    let mut figures = StdioFigures { init_ms: millis(init), ..StdioFigures::default() };
    figures.sequential = sequential(&mut server, calls, 1).with_context(|| format!("{}: sequential calls", target.name))?;
    let mut next_id = 1_000_000;
    for depth in DEPTHS {
        let total = (calls * 2).max(depth * 4);
        figures.pipelined.push(pipelined(&mut server, depth, total, next_id)?);
        next_id += total;
    }
    figures.peak_rss_mb = peak_rss_mb(server.pid())?;
    server.stop()?;
    figures.one_core = on_one_core(|| {
        let (mut server, _) = StdioServer::start(&target.command, WAIT)?;
        let figures = sequential(&mut server, calls, 1).with_context(|| format!("{}: sequential calls on one core", target.name))?;
        server.stop()?;
        Ok(figures)
    })?;
    Ok(figures)
}
