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

use crate::machine::{self, Cores, Others};

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

/// The tool Paddock and native answer: the `text` sample's echo.
pub const ECHO_TOOL: &str = "text_echo";

/// A `tools/call` of `text_echo` with `{"text":"hello"}`.
pub fn echo_call(id: usize) -> String {
    tool_call(ECHO_TOOL, id)
}

/// A `tools/call` of `tool` with `{"text":"hello"}`.
pub fn tool_call(tool: &str, id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"text":"hello"}}}}}}"#)
}

/// A 2026-07-28 `tools/call` of `tool` with `{"text":"hello"}`: stateless, with the `_meta` of
/// that revision.
pub fn stateless_call(tool: &str, id: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"text":"hello"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"paddock-bench","version":"1"}}}}}}}}"#
    )
}

/// One server under test: its name in the report, the command that serves stdio, the echo tool
/// it is called through, and whether it is measured or a peer.
pub struct Target {
    pub name: String,
    pub command: Vec<String>,
    pub tool: String,
    pub role: Role,
}

/// How long a peer may stay silent (after its start) before it is killed.
pub const PEER_SILENCE: Duration = Duration::from_secs(10);

/// What a server is in the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Paddock or native: it must exit once its stdin closes, and any failure fails the run.
    Measured,
    /// Another MCP server: it is sent SIGTERM (not every server exits when its input ends), and
    /// a pipelining depth it fails is reported as failed.
    Peer,
}

impl Target {
    /// A server answering `text_echo`, which exits at the end of its input.
    pub fn echo(name: &str, command: Vec<String>) -> Target {
        Target { name: name.to_owned(), command, tool: ECHO_TOOL.to_owned(), role: Role::Measured }
    }

    /// A peer with an echo tool, from `NAME=TOOL=COMMAND` (the command split at spaces).
    pub fn peer(spec: &str) -> Result<Target> {
        let mut parts = spec.splitn(3, '=');
        let (Some(name), Some(tool), Some(command)) = (parts.next(), parts.next(), parts.next()) else {
            bail!("a peer is NAME=TOOL=COMMAND, not `{spec}`");
        };
        let command: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
        if name.is_empty() || tool.is_empty() || command.is_empty() {
            bail!("a peer is NAME=TOOL=COMMAND, with none of them empty: `{spec}`");
        }
        Ok(Target { name: name.to_owned(), command, tool: tool.to_owned(), role: Role::Peer })
    }

    /// How long the server may stay silent before it is killed: a peer that hangs under load
    /// costs the run this long.
    pub fn silence_limit(&self) -> Duration {
        match self.role {
            Role::Measured => WAIT,
            Role::Peer => PEER_SILENCE,
        }
    }

    /// Stops `server`: by closing its stdin, and for a peer with SIGTERM as well.
    pub fn stop(&self, server: StdioServer) -> Result<()> {
        match self.role {
            Role::Measured => server.stop(),
            Role::Peer => server.terminate(),
        }
    }
}

/// The figures of one stdio round of one server.
#[derive(Debug, Clone, Default)]
pub struct StdioFigures {
    pub init_ms: f64,
    /// Sequential calls where the scheduler places client and server.
    pub sequential: Sequential,
    /// Sequential calls with the client thread and every server thread on one core.
    pub one_core: Sequential,
    /// The same as 2026-07-28 calls (`stateless_call`), for the servers measured (not peers).
    pub one_core_stateless: Sequential,
    /// Calls per second at each of [`DEPTHS`], the server bound to one core and the client
    /// thread to another; NaN where a peer failed.
    pub pipelined: Vec<f64>,
    /// The client thread's share of its core at each depth (1.0: the rate is its limit).
    pub pipelined_client: Vec<f64>,
    /// The server's CPU per call (every thread), in µs, per depth.
    pub pipelined_server_cpu_us: Vec<f64>,
    pub peak_rss_mb: f64,
}

/// The figures of sequential calls: latency and the server's CPU time per call.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sequential {
    pub p50_us: f64,
    pub p99_us: f64,
    pub cpu_per_call_us: f64,
}

/// Times `calls` sequential calls of `tool` (ids from `first_id`) after `WARM_UP_CALLS` to warm
/// up; the server's CPU time is read before and after.
pub fn sequential(server: &mut StdioServer, tool: &str, calls: usize, first_id: usize) -> Result<Sequential> {
    sequential_of(server, tool, calls, first_id, tool_call)
}

/// `sequential`, with each call's line from `call` (`tool_call` or `stateless_call`).
pub fn sequential_of(server: &mut StdioServer, tool: &str, calls: usize, first_id: usize, call: fn(&str, usize) -> String) -> Result<Sequential> {
    for id in first_id..first_id + WARM_UP_CALLS {
        server.request(&call(tool, id))?;
    }
    let first_id = first_id + WARM_UP_CALLS;
    let cpu_before = cpu_ns(server.pid())?;
    let mut latencies = Vec::with_capacity(calls);
    for id in first_id..first_id + calls {
        let line = call(tool, id);
        let started = Instant::now();
        server.request(&line)?;
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

    /// Closes stdin and sends SIGTERM; a server still there after `WAIT` is killed and fails the round.
    pub fn terminate(self) -> Result<()> {
        let StdioServer { stdin, process, progress, .. } = self;
        drop(stdin);
        drop(progress);
        process.terminate(WAIT)
    }
}

/// Calls per second with `depth` requests kept in flight.
pub fn pipelined(server: &mut StdioServer, tool: &str, depth: usize, calls: usize, first_id: usize) -> Result<f64> {
    let started = Instant::now();
    let mut sent = 0;
    let mut received = 0;
    let mut batch = String::new();
    while received < calls {
        batch.clear();
        while sent < calls && sent - received < depth {
            batch.push_str(&tool_call(tool, first_id + sent));
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

/// One stdio round of `target`: a server where the scheduler places it (start, sequential
/// calls), one bound to the server core with the client thread on the client core (pipelined
/// calls, peak RSS), then one on the bench's core for the sequential calls.
pub fn round(target: &Target, calls: usize, cores: Cores) -> Result<StdioFigures> {
    let (mut server, init) = StdioServer::start(&target.command, target.silence_limit())?;
    let mut figures = StdioFigures { init_ms: millis(init), ..StdioFigures::default() };
    figures.sequential = sequential(&mut server, &target.tool, calls, 1).with_context(|| format!("{}: sequential calls", target.name))?;
    target.stop(server)?;
    let (mut server, _) = machine::on_core(cores.server, || StdioServer::start(&target.command, target.silence_limit()))?;
    let mut next_id = 1_000_000;
    // Read before each depth too: a peer that hangs is killed, and its peak is then the last read.
    let mut peak_rss = peak_rss_mb(server.pid())?;
    machine::on_core(cores.client, || {
        for depth in DEPTHS {
            let total = (calls * 2).max(depth * 4);
            let others = Others::start(&[server.pid()]);
            let client_before = crate::measure::thread_cpu_ns();
            let server_before = crate::measure::cpu_ns(server.pid())?;
            let started = Instant::now();
            let rate = pipelined(&mut server, &target.tool, depth, total, next_id);
            let client = (crate::measure::thread_cpu_ns() - client_before) as f64 / 1e9 / started.elapsed().as_secs_f64();
            let server_cpu_us = crate::measure::cpu_ns(server.pid()).map(|after| (after - server_before) as f64 / 1e3 / total as f64).unwrap_or(f64::NAN);
            machine::record(format!("stdio, {}, {depth} in flight", target.name), others.finish());
            match rate {
                Ok(rate) => {
                    figures.pipelined.push(rate);
                    figures.pipelined_client.push(client);
                    figures.pipelined_server_cpu_us.push(server_cpu_us);
                    peak_rss = peak_rss_mb(server.pid())?;
                }
                // A peer that fails a depth is reported as failing it (and every deeper one).
                Err(err) if target.role == Role::Peer => {
                    eprintln!("paddock-bench: {} failed with {depth} calls in flight: {err:#}", target.name);
                    figures.pipelined.resize(DEPTHS.len(), f64::NAN);
                    figures.pipelined_client.resize(DEPTHS.len(), f64::NAN);
                    figures.pipelined_server_cpu_us.resize(DEPTHS.len(), f64::NAN);
                    break;
                }
                Err(err) => return Err(err.context(format!("{}: {depth} in flight", target.name))),
            }
            next_id += total;
        }
        Ok(())
    })?;
    figures.peak_rss_mb = peak_rss;
    target.stop(server)?;
    (figures.one_core, figures.one_core_stateless) = on_one_core(|| {
        let (mut server, _) = StdioServer::start(&target.command, target.silence_limit())?;
        let others = Others::start(&[server.pid()]);
        let figures = sequential(&mut server, &target.tool, calls, 1).with_context(|| format!("{}: sequential calls on one core", target.name))?;
        machine::record(format!("stdio, {}, one core, sequential", target.name), others.finish());
        let stateless = if target.role == Role::Measured {
            let others = Others::start(&[server.pid()]);
            let figures = sequential_of(&mut server, &target.tool, calls, 1_000_000, stateless_call)
                .with_context(|| format!("{}: sequential 2026-07-28 calls on one core", target.name))?;
            machine::record(format!("stdio, {}, one core, sequential 2026-07-28", target.name), others.finish());
            figures
        } else {
            Sequential::default()
        };
        target.stop(server)?;
        Ok((figures, stateless))
    })?;
    Ok(figures)
}
