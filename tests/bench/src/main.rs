//! `paddock-bench`: Paddock and a native JSON-RPC echo server (`native-echo`, no sandbox) run the
//! same workloads side by side, in interleaved rounds; the report gives the median of each
//! figure for both, their ratio, and the machine's 1-minute load beside each section.
//!
//! Sections (all run by default; `--only` picks some):
//! - `stdio`: time to the `initialize` reply; sequential `tools/call` latency (p50, p99), where the
//!   scheduler places client and server and with both on one core; server
//!   CPU per call (`/proc/PID/task/*/schedstat`, over the sequential phase); pipelined calls per
//!   second with 1, 8, 64 and 256 requests in flight; peak RSS (`VmHWM`). With `--peer`, other
//!   MCP servers (hyper-mcp, Wassette, ...) run the same workload in the same rounds, through
//!   their own echo tool.
//! - `http`: requests per second and latency over 16 and 64 keep-alive connections, in both
//!   protocol eras (2025-11-25 sessions with SSE replies, 2026-07-28 stateless with JSON).
//! - `websocket`: calls per second over one `/ws` connection with 64 in flight, and sequential
//!   latency, beside the stdio pipelined figure at the same depth.
//! - `startup`: Paddock with N distinct plugins, cold and warm compiled-plugin cache.
//! - `echo-1mib`: sequential `tools/call` with a 1 MiB text, over stdio.
//! - `live`: Paddock alone: the time from a new plugin version's rename into the folder to its
//!   tool answering (its code cached, and compiled on the way), and a call's latency while the
//!   folder is reloaded every 100 ms beside the same calls with the folder quiet.
//! - `replicas`: Paddock beside itself with and without what replicas share (a real
//!   `redis-server` on loopback): the forward hop's added latency, plain calls with a store
//!   configured against none, and 2026-07-28 tasks created per second with the store and without.
//! - `load`: Paddock alone, once after the rounds: 1,000 clients at once mixing stdio,
//!   Streamable HTTP in both eras, HTTP+SSE and WebSocket for a bounded time, every reply
//!   checked (none lost, none duplicated) and the host's RSS held to its memory budget; calls
//!   per second and latency (p50, p99, max) per transport.
//!
//! The tool is `text_echo` from the `text` sample plugin. `--quick` runs one short round of
//! everything: CI uses it so the harness cannot rot, and asserts nothing about the figures.

// The report is the program's output (stdout); progress goes to stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod http;
mod large_echo;
mod live;
mod load;
mod machine;
mod measure;
mod process;
mod replicas;
mod startup;
mod stdio;
mod websocket;
mod wrk;
mod ws_load;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};

use crate::http::{CASES, HttpFigures};
use crate::large_echo::LargeEchoFigures;
use crate::measure::median_of;
use crate::startup::{StartFigures, StartupFigures};
use crate::stdio::{DEPTHS, StdioFigures, Target, WARM_UP_CALLS};
use crate::websocket::{IN_FLIGHT, WebSocketFigures};

/// Benchmarks Paddock beside a native echo server.
#[derive(Debug, Parser)]
struct Args {
    /// The `paddock` binary.
    #[arg(long, default_value = "target/release/paddock")]
    paddock: PathBuf,
    /// A plugins folder serving `text_echo` (the `text` sample plugin, `text.wasm`).
    #[arg(long, default_value = "sample-plugins/dist")]
    plugins: PathBuf,
    /// Interleaved rounds; medians are reported.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Sequential calls per round (stdio and WebSocket).
    #[arg(long, default_value_t = 2000)]
    calls: usize,
    /// One short round of everything, for CI.
    #[arg(long)]
    quick: bool,
    /// The conformance fixture (for the replicas section's tasks).
    #[arg(long, default_value = "tests/plugins/target/wasm32-wasip2/release/conformance.wasm")]
    conformance_plugin: PathBuf,
    /// Only these sections (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = Section::value_variants().to_vec())]
    only: Vec<Section>,
    /// Seconds each HTTP load is measured (whole seconds for `wrk`, after one of warm-up).
    #[arg(long, default_value_t = 2.0)]
    http_seconds: f64,
    /// The `wrk` that loads the HTTP section (default: `wrk` on `PATH`).
    #[arg(long)]
    wrk: Option<PathBuf>,
    /// Plugin counts of the start-up section (comma-separated); default 1,20,100 (1,3 with --quick).
    #[arg(long, value_delimiter = ',')]
    startup_plugins: Option<Vec<usize>>,
    /// The component copied N times for the start-up section (default: `fetch.wasm` in the plugins
    /// folder: the `text` plugin's copies would all declare the same resource URIs, and only the
    /// first would be served).
    #[arg(long)]
    startup_plugin: Option<PathBuf>,
    /// MiB of zeros in each start-up copy's custom section: plugins the size of, say, a
    /// component with a language runtime inside, without compiling more code.
    #[arg(long, default_value_t = 0)]
    startup_padding_mib: usize,
    /// Sequential 1 MiB calls per round.
    #[arg(long, default_value_t = 20)]
    large_calls: usize,
    /// Another MCP server run in the stdio section's rounds beside Paddock, as
    /// `NAME=TOOL=COMMAND`: TOOL is its echo tool, called with `{"text":"hello"}`, and COMMAND
    /// (split at spaces) serves stdio. Repeat for several.
    #[arg(long = "peer", value_name = "NAME=TOOL=COMMAND")]
    peers: Vec<String>,
    /// Clients of the load section (one in twenty on stdio, each with a host of its own).
    #[arg(long, default_value_t = 1000)]
    load_clients: usize,
    /// Seconds the load section's clients call.
    #[arg(long, default_value_t = 20.0)]
    load_seconds: f64,
    /// The memory budget of the load section's HTTP host, in MiB; its RSS must stay within it.
    #[arg(long, default_value_t = 256)]
    load_budget_mib: usize,
    /// The `versioned` test plugin the live section makes new versions of (built by
    /// `scripts/build-plugins`).
    #[arg(long, default_value = "tests/plugins/target/wasm32-wasip2/release/versioned.wasm")]
    live_plugin: PathBuf,
    /// Timed replacements of each kind per round in the live section.
    #[arg(long, default_value_t = 5)]
    live_replacements: usize,
}

/// A part of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Section {
    Stdio,
    Http,
    Websocket,
    Startup,
    #[value(name = "echo-1mib")]
    Echo1Mib,
    Live,
    Replicas,
    Load,
}

impl std::fmt::Display for Section {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default().as_str())
    }
}

/// Every round's figures of one section, and the load when each round of it began.
struct Results<T> {
    rounds: Vec<T>,
    loads: Vec<String>,
    seconds: f64,
}

impl<T> Default for Results<T> {
    fn default() -> Self {
        Results { rounds: Vec::new(), loads: Vec::new(), seconds: 0.0 }
    }
}

impl<T> Results<T> {
    /// Runs one round of the section, recording the load first and the time it took.
    fn run(&mut self, section: Section, number: usize, body: impl FnOnce() -> Result<T>) -> Result<()> {
        self.loads.push(measure::load());
        let started = Instant::now();
        let figures = body().with_context(|| format!("round {number}, section {section}"))?;
        self.seconds += started.elapsed().as_secs_f64();
        self.rounds.push(figures);
        Ok(())
    }

    fn loads(&self) -> String {
        self.loads.join(", ")
    }

    /// `; the section took N s`, for its heading.
    fn took(&self) -> String {
        format!("; the section took {:.1} s", self.seconds)
    }
}

impl<T> Results<T> {
    /// The median over the rounds of one figure of the server at `index` (0 Paddock, 1 native,
    /// then the peers).
    fn median_at<F>(&self, index: usize, figure: impl Fn(&F) -> f64) -> f64
    where
        T: AsRef<[F]>,
    {
        median_of(&self.rounds, |r| figure(&r.as_ref()[index]))
    }

    /// The median over the rounds of one figure, for Paddock and for native.
    fn medians<F>(&self, figure: impl Fn(&F) -> f64) -> (f64, f64)
    where
        T: AsRef<[F]>,
    {
        (self.median_at(0, &figure), self.median_at(1, &figure))
    }
}

fn native_echo() -> Result<PathBuf> {
    let path = std::env::current_exe()?.with_file_name("native-echo");
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
        args.http_seconds = 0.3;
        args.large_calls = 5;
        args.load_clients = 200;
        args.load_seconds = 2.0;
        args.live_replacements = 2;
    }
    let startup_counts = args.startup_plugins.clone().unwrap_or_else(|| if args.quick { vec![1, 3] } else { vec![1, 20, 100] });
    let text_wasm = args.plugins.join("text.wasm");
    let startup_template = args.startup_plugin.clone().unwrap_or_else(|| args.plugins.join("fetch.wasm"));
    for (what, path) in [("paddock", &args.paddock), ("plugins folder", &args.plugins), ("text plugin", &text_wasm), ("start-up plugin", &startup_template)] {
        if !Path::new(path).exists() {
            bail!("the {what} `{}` is missing: run scripts/build", path.display());
        }
    }
    let run = |section| args.only.contains(&section);
    let paddock = args.paddock.display().to_string();
    let native = native_echo()?.display().to_string();
    let mut stdio_targets =
        vec![Target::echo("paddock", vec![paddock.clone(), "serve".into(), args.plugins.display().to_string()]), Target::echo("native", vec![native.clone()])];
    for peer in &args.peers {
        stdio_targets.push(Target::peer(peer)?);
    }
    let http_commands = [
        // Every connection of the load comes from one address, standing for many clients.
        vec![
            paddock.clone(),
            "--log-format".into(),
            "json".into(),
            "serve".into(),
            args.plugins.display().to_string(),
            "--http".into(),
            "127.0.0.1:0".into(),
            "--max-sessions-per-client".into(),
            "1024".into(),
            "--session-burst-per-client".into(),
            "1024".into(),
        ],
        vec![native.clone(), "--http".into(), "127.0.0.1:0".into()],
    ];
    let large_folder = if run(Section::Echo1Mib) { Some(large_echo::plugin_folder(&text_wasm)?) } else { None };
    let large_targets = [
        Target::echo("paddock", vec![paddock.clone(), "serve".into(), large_folder.as_ref().map(|f| f.path().display().to_string()).unwrap_or_default()]),
        Target::echo("native", vec![native.clone()]),
    ];
    let startup_folders = if run(Section::Startup) {
        let template = std::fs::read(&startup_template).with_context(|| format!("read {}", startup_template.display()))?;
        let text = std::fs::read(&text_wasm).with_context(|| format!("read {}", text_wasm.display()))?;
        startup_counts
            .iter()
            .map(|&count| Ok((count, startup::plugin_folder(&template, count, &text, args.startup_padding_mib << 20)?)))
            .collect::<Result<Vec<_>>>()?
    } else {
        Vec::new()
    };
    let replica_setup = if run(Section::Replicas) {
        let redis = replicas::redis_server().context("the replicas section needs `redis-server` (Debian package `redis-server`)")?;
        ensure_exists("conformance fixture", &args.conformance_plugin)?;
        Some((replicas::plugin_folder(&text_wasm, &args.conformance_plugin)?, redis))
    } else {
        None
    };
    let mut replica_results = Results::<replicas::ReplicaFigures>::default();
    let live_folder = if run(Section::Live) { Some(live::plugin_folder(&text_wasm, &args.live_plugin)?) } else { None };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let window = Duration::from_secs_f64(args.http_seconds);
    let cores = machine::Cores::pick()?;
    let wrk = if run(Section::Http) { Some(wrk::find(args.wrk.as_deref())?) } else { None };

    let started = Instant::now();
    let mut stdio_results = Results::<Vec<StdioFigures>>::default();
    let mut http_results = Results::<[HttpFigures; 2]>::default();
    let mut websocket_results = Results::<[WebSocketFigures; 2]>::default();
    let mut startup_results = Results::<StartupFigures>::default();
    let mut large_results = Results::<[LargeEchoFigures; 2]>::default();
    let mut live_results = Results::<live::LiveFigures>::default();
    for number in 1..=args.rounds {
        if run(Section::Stdio) {
            stdio_results.run(Section::Stdio, number, || {
                stdio_targets.iter().map(|target| stdio::round(target, args.calls, cores).with_context(|| target.name.clone())).collect()
            })?;
        }
        if run(Section::Http) {
            let setup = http::LoadSetup { wrk: wrk.as_deref().context("wrk")?, cores, window };
            http_results.run(Section::Http, number, || http::round(&http_commands[0], &http_commands[1], &runtime, &setup))?;
        }
        if run(Section::Websocket) {
            websocket_results.run(Section::Websocket, number, || websocket::round(&http_commands[0], &http_commands[1], &runtime, args.calls, cores))?;
        }
        if run(Section::Startup) {
            startup_results.run(Section::Startup, number, || startup::round(&args.paddock, &stdio_targets[1].command, &startup_folders))?;
        }
        if run(Section::Echo1Mib) {
            large_results.run(Section::Echo1Mib, number, || {
                let paddock = large_echo::round(&large_targets[0], args.large_calls).context("paddock")?;
                let native = large_echo::round(&large_targets[1], args.large_calls).context("native")?;
                Ok([paddock, native])
            })?;
        }
        if let Some(folder) = &live_folder {
            live_results.run(Section::Live, number, || {
                let window = Duration::from_secs_f64(if args.quick { 1.2 } else { 3.0 });
                live::round(&args.paddock, folder.path(), &args.live_plugin, args.live_replacements, window, u32::try_from(number).unwrap_or(0))
            })?;
        }
        if let Some((folder, redis)) = &replica_setup {
            replica_results.run(Section::Replicas, number, || replicas::round(&paddock, folder.path(), redis, &runtime, args.calls, window))?;
        }
        eprintln!("paddock-bench: round {number}/{} done ({:.1} s so far)", args.rounds, started.elapsed().as_secs_f64());
    }
    let load_figures = if run(Section::Load) {
        let setup = load::LoadSetup {
            paddock: &paddock,
            plugins: &args.plugins.display().to_string(),
            clients: args.load_clients,
            seconds: args.load_seconds,
            budget_mib: args.load_budget_mib,
        };
        let figures = load::run(&setup, &runtime).context("the load section")?;
        eprintln!("paddock-bench: load done ({:.1} s so far)", started.elapsed().as_secs_f64());
        Some(figures)
    } else {
        None
    };

    println!("Machine: {}.\n", machine::describe());
    if run(Section::Stdio) {
        report_stdio(&args, &stdio_targets, &stdio_results, cores);
    }
    if run(Section::Http) {
        report_http(&args, &http_results, cores);
    }
    if run(Section::Websocket) {
        report_websocket(&args, &websocket_results, &stdio_results);
    }
    if run(Section::Startup) {
        report_startup(&args, &startup_counts, &startup_template, &startup_results);
    }
    if run(Section::Echo1Mib) {
        report_large_echo(&args, &large_results);
    }
    if run(Section::Live) {
        report_live(&args, &live_results);
    }
    if run(Section::Replicas) {
        report_replicas(&args, &replica_results);
    }
    if let Some(figures) = &load_figures {
        load::report(figures);
    }
    report_contamination();
    println!("Whole run: {:.1} s.", started.elapsed().as_secs_f64());
    Ok(())
}

/// Every measured run with the CPU the rest of the machine used meanwhile.
fn report_contamination() {
    let records = machine::records();
    if records.is_empty() {
        return;
    }
    let contaminated = records.iter().filter(|r| r.others.contaminated()).count();
    println!(
        "Contamination record: the CPU other processes used during each measured run (`/proc/PID/stat`; the servers, the load client and the harness excluded), in CPUs; \
         a run above {:.2} is marked contaminated ({contaminated} of {} runs). Kernel threads (soft interrupts of the loopback traffic among them) are listed apart and mark nothing.",
        machine::CONTAMINATED_ABOVE,
        records.len()
    );
    println!();
    println!("| run | other processes | busiest | kernel threads | contaminated |");
    println!("|---|---:|---|---:|---|");
    for record in &records {
        let busiest = record.others.busiest.as_ref().map_or_else(|| "—".to_owned(), |(name, share)| format!("{name} ({share:.2})"));
        println!(
            "| {} | {:.2} | {busiest} | {:.2} | {} |",
            record.run,
            record.others.processes,
            record.others.kernel_threads,
            if record.others.contaminated() { "yes" } else { "no" }
        );
    }
    println!();
}

fn report_replicas(args: &Args, results: &Results<replicas::ReplicaFigures>) {
    println!(
        "## Replicas (HTTP, Paddock beside itself; median of {} rounds, {} sequential calls each way, {} connections creating tasks for {:.1} s; load at each round: {}{})\n",
        results.rounds.len(),
        args.calls,
        replicas::TASK_CONNECTIONS,
        args.http_seconds,
        results.loads(),
        results.took()
    );
    let median = |figure: fn(&replicas::ReplicaFigures) -> f64| median_of(&results.rounds, figure);
    println!("| figure | on | off | on / off |");
    println!("|---|---:|---:|---:|");
    let row = |name: &str, on: f64, off: f64| {
        let ratio = if off > 0.0 { on / off } else { 0.0 };
        println!("| {name} | {on:.1} | {off:.1} | {ratio:.2}× |");
    };
    row("legacy `tools/call` p50 (µs): through another replica (forwarded) / to the owner", median(|f| f.forwarded_p50_us), median(|f| f.direct_p50_us));
    row("2026-07-28 `tools/call` p50 (µs): with `--store` / without", median(|f| f.plain_store_p50_us), median(|f| f.plain_solo_p50_us));
    row("2026-07-28 `tools/call` server CPU per call (µs): with `--store` / without", median(|f| f.plain_store_cpu_us), median(|f| f.plain_solo_cpu_us));
    row("2026-07-28 tasks created per second: in the store / in the process", median(|f| f.tasks_store_per_s), median(|f| f.tasks_solo_per_s));
    println!("The forward hop adds {:.0} µs at the p50.\n", median(|f| f.forwarded_p50_us) - median(|f| f.direct_p50_us));
}

fn report_live(args: &Args, results: &Results<live::LiveFigures>) {
    println!(
        "## Live folder (stdio; median of {} rounds, {} replacements of each kind and {} s of calls each way per round; load at each round: {}{})\n",
        results.rounds.len(),
        args.live_replacements,
        if args.quick { 1.2 } else { 3.0 },
        results.loads(),
        results.took()
    );
    let median = |figure: fn(&live::LiveFigures) -> f64| median_of(&results.rounds, figure);
    println!("| figure | paddock |");
    println!("|---|---:|");
    println!("| rename to callable, code cached (ms) | {:.1} |", median(|f| f.replace_cached_ms));
    println!("| rename to callable, compiled on the way (ms) | {:.1} |", median(|f| f.replace_compiled_ms));
    println!(
        "| `text_echo` p50 / p99 / max, folder quiet (µs) | {:.0} / {:.0} / {:.0} |",
        median(|f| f.quiet_p50_us),
        median(|f| f.quiet_p99_us),
        median(|f| f.quiet_max_us)
    );
    println!(
        "| `text_echo` p50 / p99 / max, `v.wasm` replaced every {} ms (µs) | {:.0} / {:.0} / {:.0} |",
        live::RELOAD_EVERY.as_millis(),
        median(|f| f.reloading_p50_us),
        median(|f| f.reloading_p99_us),
        median(|f| f.reloading_max_us)
    );
    println!("| replacements swapped in during those calls | {:.0} |", median(|f| f.reloads as f64));
    println!();
}

fn ensure_exists(what: &str, path: &Path) -> Result<()> {
    if !path.exists() {
        bail!("the {what} `{}` is missing: run scripts/build-plugins", path.display());
    }
    Ok(())
}

/// Prints a `figure | paddock | native | paddock / native` table.
fn comparison_table(rows: &[(String, f64, f64)]) {
    println!("| figure | paddock | native | paddock / native |");
    println!("|---|---:|---:|---:|");
    for (name, paddock, native) in rows {
        let ratio = if *native > 0.0 { paddock / native } else { 0.0 };
        println!("| {name} | {paddock:.1} | {native:.1} | {ratio:.2}× |");
    }
    println!();
}

/// The label of the stdio section's stateless rows (measured for Paddock and native only: the
/// peers speak the session revisions).
const STATELESS: &str = "2026-07-28";

/// One figure of the stdio section: its name, how it is read, and whether less is better.
type StdioFigure = (String, Box<dyn Fn(&StdioFigures) -> f64>, bool);

fn stdio_figures() -> Vec<StdioFigure> {
    let mut figures: Vec<StdioFigure> = vec![
        ("`initialize` reply (ms)".into(), Box::new(|f: &StdioFigures| f.init_ms), true),
        ("sequential `tools/call` p50 (µs)".into(), Box::new(|f: &StdioFigures| f.sequential.p50_us), true),
        ("sequential `tools/call` p99 (µs)".into(), Box::new(|f: &StdioFigures| f.sequential.p99_us), true),
        ("server CPU per call (µs)".into(), Box::new(|f: &StdioFigures| f.sequential.cpu_per_call_us), true),
        ("one core: sequential `tools/call` p50 (µs)".into(), Box::new(|f: &StdioFigures| f.one_core.p50_us), true),
        ("one core: sequential `tools/call` p99 (µs)".into(), Box::new(|f: &StdioFigures| f.one_core.p99_us), true),
        ("one core: server CPU per call (µs)".into(), Box::new(|f: &StdioFigures| f.one_core.cpu_per_call_us), true),
        (format!("one core, {STATELESS}: sequential `tools/call` p50 (µs)"), Box::new(|f: &StdioFigures| f.one_core_stateless.p50_us), true),
        (format!("one core, {STATELESS}: server CPU per call (µs)"), Box::new(|f: &StdioFigures| f.one_core_stateless.cpu_per_call_us), true),
    ];
    for (index, depth) in DEPTHS.iter().enumerate() {
        figures.push((format!("pipelined calls/s, {depth} in flight"), Box::new(move |f: &StdioFigures| f.pipelined[index]), false));
    }
    figures.push(("peak RSS (MB)".into(), Box::new(|f: &StdioFigures| f.peak_rss_mb), true));
    figures
}

fn report_stdio(args: &Args, targets: &[Target], results: &Results<Vec<StdioFigures>>, cores: machine::Cores) {
    let figures = stdio_figures();
    let rows: Vec<(String, f64, f64)> = figures
        .iter()
        .map(|(name, figure, _)| {
            let (paddock, native) = results.medians(|f: &StdioFigures| figure(f));
            (name.clone(), paddock, native)
        })
        .collect();
    println!(
        "stdio, `text_echo`: medians of {} interleaved round(s) of {} sequential calls (after {WARM_UP_CALLS} to warm up), once where the scheduler places client and server, \
         once with the client and the whole server bound to one core (`one core`: no call waits for an idle vCPU to wake); pipelined calls with the server bound to core {} and the client thread to core {}; 1-minute load at each round: {}{}",
        args.rounds,
        args.calls,
        cores.server,
        cores.client,
        results.loads(),
        results.took()
    );
    println!();
    comparison_table(&rows);
    let mut client_bound = Vec::new();
    for (index, target) in targets.iter().enumerate() {
        for (depth_index, depth) in DEPTHS.iter().enumerate() {
            let share = results.median_at(index, |f: &StdioFigures| f.pipelined_client.get(depth_index).copied().unwrap_or(0.0));
            if share >= machine::CLIENT_BOUND_AT {
                client_bound.push(format!("{} at {depth} in flight ({:.0}%)", target.name, 100.0 * share));
            }
        }
    }
    if !client_bound.is_empty() {
        println!(
            "The harness's client thread used {:.0}% of its core or more when pipelining to: {}. There the calls per second are the client's limit, not the server's.",
            100.0 * machine::CLIENT_BOUND_AT,
            client_bound.join("; ")
        );
        println!();
    }
    let peers = &targets[2..];
    if peers.is_empty() {
        return;
    }
    let called: Vec<String> = peers.iter().map(|peer| format!("{} calls `{}`", peer.name, peer.tool)).collect();
    println!(
        "Peers over stdio, in the same rounds as the table above ({}), each with the same workload and `{{\"text\":\"hello\"}}`; \
         `Paddock ahead` is how many times better Paddock's figure is (the peer's over Paddock's for times, CPU and memory; Paddock's over the peer's for calls/s); \
         `failed`: at that depth the peer answered a call with an error or stopped answering (and was killed after {} s)",
        called.join(", "),
        stdio::PEER_SILENCE.as_secs()
    );
    println!();
    let mut header = String::from("| figure | paddock |");
    let mut rule = String::from("|---|---:|");
    for peer in peers {
        header.push_str(&format!(" {} | Paddock ahead |", peer.name));
        rule.push_str("---:|---:|");
    }
    println!("{header}");
    println!("{rule}");
    for (name, figure, less_is_better) in figures.iter().filter(|(name, _, _)| !name.contains(STATELESS)) {
        let paddock = results.median_at(0, |f: &StdioFigures| figure(f));
        let mut line = format!("| {name} | {paddock:.1} |");
        for index in 2..targets.len() {
            let peer = results.median_at(index, |f: &StdioFigures| figure(f));
            let ahead = match (*less_is_better, paddock > 0.0 && peer > 0.0) {
                (_, false) => 0.0,
                (true, true) => peer / paddock,
                (false, true) => paddock / peer,
            };
            if peer.is_nan() {
                line.push_str(" failed | — |");
            } else {
                line.push_str(&format!(" {peer:.1} | {ahead:.2}× |"));
            }
        }
        println!("{line}");
    }
    println!();
}

/// How one figure of an HTTP load is read.
type HttpFigure = fn(&http::LoadFigures) -> f64;

fn report_http(args: &Args, results: &Results<[HttpFigures; 2]>, cores: machine::Cores) {
    let placement = if cores.shared() {
        format!("servers and `wrk` share the only core ({})", cores.server)
    } else {
        format!("the servers on core {}, `wrk` on core {}", cores.server, cores.client)
    };
    println!(
        "HTTP `POST /mcp`, `text_echo`, load from `wrk` (one thread, keep-alive HTTP/1.1 connections sending requests back to back) for {} s after 1 s of warm-up, {placement}; \
         2025-11-25 sends each request in one of as many sessions as connections and reads SSE replies, 2026-07-28 is stateless with JSON replies; server CPU per request is every server thread's CPU over the run; \
         medians of {} round(s); 1-minute load at each round: {}{}",
        (args.http_seconds as u64).max(1),
        args.rounds,
        results.loads(),
        results.took()
    );
    println!();
    let mut rows = Vec::new();
    let mut client_bound = Vec::new();
    for (index, (era, connections)) in CASES.iter().enumerate() {
        let pick = |figure: fn(&http::LoadFigures) -> f64| results.medians(|r| figure(&r.loads[index]));
        let figures: [(&str, HttpFigure); 5] = [
            ("requests/s", |f| f.requests_per_s),
            ("p50 (µs)", |f| f.p50_us),
            ("p99 (µs)", |f| f.p99_us),
            ("server CPU per request (µs)", |f| f.server_cpu_us),
            ("`wrk`'s share of its core (%)", |f| 100.0 * f.client_cpu),
        ];
        for (what, figure) in figures {
            let (paddock, native) = pick(figure);
            rows.push((format!("{}, {connections} connections, {what}", era.label()), paddock, native));
        }
        let (paddock, native) = pick(|f| f.client_cpu);
        for (name, share) in [("paddock", paddock), ("native", native)] {
            if share >= machine::CLIENT_BOUND_AT {
                client_bound.push(format!("{name}, {}, {connections} connections ({:.0}%)", era.label(), 100.0 * share));
            }
        }
    }
    comparison_table(&rows);
    if !client_bound.is_empty() {
        println!(
            "`wrk` used {:.0}% of its core or more in: {}. There the requests per second are the client's limit, not the server's: the server's own figure is its CPU per request.",
            100.0 * machine::CLIENT_BOUND_AT,
            client_bound.join("; ")
        );
        println!();
    }
}

fn report_websocket(args: &Args, results: &Results<[WebSocketFigures; 2]>, stdio_results: &Results<Vec<StdioFigures>>) {
    println!(
        "WebSocket `/ws` (subprotocol `mcp`), `text_echo`, one connection: {} sequential calls (after {WARM_UP_CALLS} to warm up) from the harness's client; then {} calls (after {WARM_UP_CALLS}) with {IN_FLIGHT} in flight from a lean blocking client on the client core, the server on the server core (the window refilled after each read, as the stdio figure's client does); medians of {} round(s); 1-minute load at each round: {}{}",
        args.calls,
        (args.calls * 5).max(IN_FLIGHT * 4),
        args.rounds,
        results.loads(),
        results.took()
    );
    println!();
    let pick = |figure: fn(&WebSocketFigures) -> f64| results.medians(figure);
    let (ws_paddock, ws_native) = pick(|f| f.calls_per_s);
    let mut rows = vec![(format!("WebSocket calls/s, {IN_FLIGHT} in flight"), ws_paddock, ws_native)];
    let (cpu_paddock, cpu_native) = pick(|f| f.server_cpu_us);
    rows.push((format!("WebSocket server CPU per call, {IN_FLIGHT} in flight (µs)"), cpu_paddock, cpu_native));
    let (client_paddock, client_native) = pick(|f| 100.0 * f.client_cpu);
    rows.push((format!("WebSocket load client's share of its core, {IN_FLIGHT} in flight (%)"), client_paddock, client_native));
    let (p50_paddock, p50_native) = pick(|f| f.seq_p50_us);
    rows.push(("WebSocket sequential `tools/call` p50 (µs)".into(), p50_paddock, p50_native));
    let (p99_paddock, p99_native) = pick(|f| f.seq_p99_us);
    rows.push(("WebSocket sequential `tools/call` p99 (µs)".into(), p99_paddock, p99_native));
    let depth_index = DEPTHS.iter().position(|&depth| depth == IN_FLIGHT).expect("the stdio depths include the WebSocket one");
    if stdio_results.rounds.is_empty() {
        comparison_table(&rows);
        println!("(stdio was not run, so there is no stdio figure to set beside these: add `stdio` to `--only`.)");
        println!();
        return;
    }
    let (stdio_paddock, stdio_native) = stdio_results.medians(|f| f.pipelined[depth_index]);
    rows.push((format!("stdio pipelined calls/s, {IN_FLIGHT} in flight (stdio section of this run)"), stdio_paddock, stdio_native));
    rows.push((format!("WebSocket calls/s as % of stdio's, {IN_FLIGHT} in flight"), 100.0 * ws_paddock / stdio_paddock, 100.0 * ws_native / stdio_native));
    let (stdio_cpu_paddock, stdio_cpu_native) = stdio_results.medians(|f| f.pipelined_server_cpu_us.get(depth_index).copied().unwrap_or(f64::NAN));
    rows.push((format!("stdio server CPU per call, {IN_FLIGHT} in flight (µs; stdio section of this run)"), stdio_cpu_paddock, stdio_cpu_native));
    comparison_table(&rows);
}

fn report_startup(args: &Args, counts: &[usize], template: &Path, results: &Results<StartupFigures>) {
    println!(
        "Start-up over stdio, Paddock with N distinct copies of `{}` and the `text` sample (`--cache-dir`: cold = a fresh empty cache; warm = the same cache on the next start, once the cold start's files are 2 s old, which verifies every compiled plugin in full; warm again = any later start, which takes unchanged files on the records the warm start left); native-echo's own start for reference; after each start, 500 sequential `text_echo` calls (after 1000 to warm up); \
         medians of {} round(s); 1-minute load at each round: {}{}",
        template.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
        args.rounds,
        results.loads(),
        results.took()
    );
    println!();
    println!(
        "| server | plugins | cache | `initialize` reply (ms) | peak RSS (MB) | `tools/list` (ms) | idle RSS (MB) | of which anonymous (MB) | `text_echo` p50 (µs) | CPU per call (µs) | `compiling…` progress lines on stderr |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|");
    let rounds = &results.rounds;
    let line = |server: &str, plugins: &str, cache: &str, pick: &dyn Fn(&StartupFigures) -> &StartFigures, progress: bool| {
        let shown = if progress {
            let lines: Vec<usize> = rounds.iter().map(|r| pick(r).progress_lines).collect();
            let rounds_with = lines.iter().filter(|&&n| n > 0).count();
            match rounds_with {
                0 => "no".to_owned(),
                n if n == lines.len() => format!("yes ({})", lines.iter().max().unwrap_or(&0)),
                n => format!("in {n} of {} rounds", lines.len()),
            }
        } else {
            "—".to_owned()
        };
        println!(
            "| {server} | {plugins} | {cache} | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {shown} |",
            median_of(rounds, |r| pick(r).init_ms),
            median_of(rounds, |r| pick(r).peak_rss_mb),
            median_of(rounds, |r| pick(r).list_ms),
            median_of(rounds, |r| pick(r).idle_rss_mb),
            median_of(rounds, |r| pick(r).idle_anon_mb),
            median_of(rounds, |r| pick(r).call_p50_us),
            median_of(rounds, |r| pick(r).call_cpu_us),
        );
    };
    line("native-echo", "—", "—", &|r| &r.native, false);
    for (index, count) in counts.iter().enumerate() {
        line("paddock", &count.to_string(), "cold", &|r| &r.paddock[index].cold, true);
        line("paddock", &count.to_string(), "warm", &|r| &r.paddock[index].warm, true);
        line("paddock", &count.to_string(), "warm again", &|r| &r.paddock[index].warm_again, true);
    }
    println!();
}

fn report_large_echo(args: &Args, results: &Results<[LargeEchoFigures; 2]>) {
    println!(
        "1 MiB echo over stdio: {} sequential `text_echo` calls with a 1 MiB ASCII text per round (Paddock with `limits.output = \"4MiB\"`); medians of {} round(s); 1-minute load at each round: {}{}",
        args.large_calls,
        args.rounds,
        results.loads(),
        results.took()
    );
    println!();
    let pick = |figure: fn(&LargeEchoFigures) -> f64| results.medians(figure);
    let (p50_paddock, p50_native) = pick(|f| f.p50_ms);
    let (p99_paddock, p99_native) = pick(|f| f.p99_ms);
    let (cpu_paddock, cpu_native) = pick(|f| f.cpu_per_call_ms);
    let (faults_paddock, faults_native) = pick(|f| f.faults_per_call);
    comparison_table(&[
        ("1 MiB `tools/call` p50 (ms)".into(), p50_paddock, p50_native),
        ("1 MiB `tools/call` p99 (ms)".into(), p99_paddock, p99_native),
        ("server CPU per call (ms)".into(), cpu_paddock, cpu_native),
        ("minor page faults per call".into(), faults_paddock, faults_native),
    ]);
}
