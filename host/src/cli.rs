//! The command line: `serve`, `inspect`, `check` and `call`, wired from config to runtime to
//! router to transport. Errors reach the user as one line each with the fix; exit codes are
//! 0 (success), 1 (a check found problems, or a called tool reported an error) and 2 (usage,
//! configuration or startup error).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

/// Paddock serves WebAssembly plugins as MCP tools, resources and prompts, each in its own
/// sandbox with only the capabilities its operator granted.
#[derive(Debug, Parser)]
#[command(name = "paddock", version, about, long_about = None)]
#[command(after_help = "Logs go to stderr; set RUST_LOG (for example RUST_LOG=paddock=debug) to change the level.\n\
Exit codes: 0 success, 1 problems found (check) or the tool reported an error (call), 2 usage or startup error.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How log records are written to stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// The shape of log records on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// One human-readable line per record.
    Text,
    /// One JSON object per record (machine-readable: every field, plugin-supplied text escaped).
    Json,
}

/// Log records that may wait for stderr. Past this, records are dropped (and counted) rather
/// than making any thread wait: a client that does not drain stderr must never stall a call.
const LOG_QUEUE_LINES: usize = 16_384;

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve every plugin in a folder over stdio (newline-delimited JSON-RPC on stdin/stdout).
    Serve {
        /// Folder of `*.wasm` plugins (and their optional `<plugin>.toml` grants).
        #[arg(default_value = "plugins")]
        plugins_dir: PathBuf,
        /// File of at least 32 random bytes that seals 2026-07-28 request states; replicas that
        /// share it complete each other's input rounds. Without it a key is drawn at start.
        #[arg(long, value_name = "FILE")]
        state_key_file: Option<PathBuf>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Show what a plugin exports and which capabilities it requests (and, with a config, what it is granted).
    Inspect {
        /// The `.wasm` component to inspect.
        file: PathBuf,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Validate the configuration and every plugin in a folder, reporting every problem at once.
    Check {
        /// Folder of `*.wasm` plugins.
        #[arg(default_value = "plugins")]
        plugins_dir: PathBuf,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Run one tool without a client and print its result as JSON.
    Call {
        /// Folder of `*.wasm` plugins.
        plugins_dir: PathBuf,
        /// The exposed tool name, as `tools/list` shows it (for example `text_echo`).
        tool: String,
        /// The tool's arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        #[command(flatten)]
        common: CommonArgs,
    },
}

#[derive(Debug, clap::Args)]
struct CommonArgs {
    /// Operator config file; defaults to `paddock.toml` in the plugins folder when it exists.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where compiled plugins are cached (default: $PADDOCK_CACHE_DIR, else $XDG_CACHE_HOME/paddock or ~/.cache/paddock).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let logging = install_logging(cli.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("paddock: cannot start the async runtime: {err}");
            return ExitCode::from(2);
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("paddock: {err:#}");
            ExitCode::from(2)
        }
    };
    // Work left behind (a request past its drain, a write to a stdout nobody reads) must not
    // hold the exit: give it a moment, then leave.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    let dropped = logging.dropped.dropped_lines();
    if dropped > 0 {
        tracing::warn!(dropped, "log records were dropped because stderr was not drained in time");
    }
    code
}

/// The log writer's handle: flushes (for a bounded time) when dropped at exit.
struct Logging {
    _guard: tracing_appender::non_blocking::WorkerGuard,
    dropped: tracing_appender::non_blocking::ErrorCounter,
}

/// Logs go to stderr through a dedicated thread and a bounded, lossy queue: a record never
/// waits for stderr, so logging can never block a plugin call or the session.
fn install_logging(format: LogFormat) -> Logging {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,paddock=info,plugin=info"));
    let ansi = format == LogFormat::Text && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .thread_name("paddock-log")
        .finish(std::io::stderr());
    let dropped = writer.error_counter();
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(ansi);
    match format {
        LogFormat::Text => builder.with_target(false).init(),
        LogFormat::Json => builder.json().with_target(true).flatten_event(true).init(),
    }
    Logging { _guard: guard, dropped }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Serve { plugins_dir, state_key_file, common } => serve(&plugins_dir, state_key_file.as_deref(), &common).await,
        Command::Inspect { file, common } => inspect(&file, &common).await,
        Command::Check { plugins_dir, common } => check(&plugins_dir, &common).await,
        Command::Call { plugins_dir, tool, args, common } => call(&plugins_dir, &tool, &args, &common).await,
    }
}

/// Loads config and plugins the same way for every command; prints config problems.
struct Loaded {
    config: crate::config::Config,
    report: crate::runtime::LoadReport,
    router: crate::router::Router,
    router_errors: Vec<crate::router::RouterError>,
}

fn open_runtime(common: &CommonArgs, config: &crate::config::Config) -> Result<crate::runtime::Runtime> {
    let options = crate::runtime::RuntimeOptions {
        cache_dir: common.cache_dir.clone(),
        max_memory: config.largest_memory_limit(),
        ..Default::default()
    };
    crate::runtime::Runtime::new(options).context("cannot start the WebAssembly runtime")
}

async fn load(plugins_dir: &Path, common: &CommonArgs) -> Result<Loaded> {
    if !plugins_dir.is_dir() {
        bail!("plugins folder `{}` does not exist (fix: create it and put `.wasm` plugins in it, or pass another folder)", plugins_dir.display());
    }
    let config = crate::config::Config::load(plugins_dir, common.config.as_deref());
    let runtime = open_runtime(common, &config)?;
    let report = crate::runtime::load_folder(&runtime, plugins_dir, &config).await;
    let entries = report
        .plugins
        .iter()
        .map(|loaded| {
            crate::router::RouterEntry::new(
                loaded.plugin.clone() as Arc<dyn crate::plugin::Plugin>,
                crate::router::Prefix::from_grant(loaded.grant.expose_prefix.as_deref()),
            )
        })
        .collect();
    let (router, router_errors) = crate::router::Router::new(entries);
    Ok(Loaded { config, report, router, router_errors })
}

async fn serve(plugins_dir: &Path, state_key_file: Option<&Path>, common: &CommonArgs) -> Result<ExitCode> {
    let loaded = load(plugins_dir, common).await?;
    let global: Vec<String> = loaded.config.global_errors().map(ToString::to_string).collect();
    if !global.is_empty() {
        bail!("the configuration is invalid:\n{}", global.join("\n"));
    }
    for problem in loaded.config.problems().iter().filter(|p| p.plugin.is_some() || p.severity == crate::config::Severity::Warning) {
        tracing::warn!("{problem}");
    }
    for problem in &loaded.report.problems {
        tracing::error!(
            plugin = problem_plugin(problem).map(crate::escape::Escaped).map(tracing::field::display),
            "plugin not loaded: {}",
            crate::escape::Escaped(&problem.to_string())
        );
    }
    for error in &loaded.router_errors {
        tracing::error!("{}", crate::escape::Escaped(&error.to_string()));
    }
    let router = Arc::new(loaded.router);
    tracing::info!(
        plugins = router.served().len(),
        tools = router.tools().len(),
        resources = router.resources().len(),
        prompts = router.prompts().len(),
        "serving over stdio"
    );
    let state_key = match state_key_file {
        Some(path) => crate::input::StateKey::from_file(path)?,
        None => crate::input::StateKey::random()?,
    };
    let server = crate::session::Server::new(router, state_key);
    crate::transport::stdio::serve_process(server).await.context("stdio transport failed")?;
    Ok(ExitCode::SUCCESS)
}

/// The plugin a load problem is about, when it is about a plugin file: the file's stem, which
/// is the plugin's id.
fn problem_plugin(problem: &crate::runtime::LoadProblem) -> Option<&str> {
    let path = &problem.path;
    path.extension().is_some_and(|e| e == "wasm").then(|| path.file_stem().and_then(|s| s.to_str())).flatten()
}

async fn check(plugins_dir: &Path, common: &CommonArgs) -> Result<ExitCode> {
    let loaded = load(plugins_dir, common).await?;
    let mut problems = 0usize;
    for problem in loaded.config.problems() {
        eprintln!("{problem}");
        if problem.severity == crate::config::Severity::Error {
            problems += 1;
        }
    }
    // A plugin left out for a bad grant was reported above, key by key, with its grant file.
    let grant_files: Vec<&Path> = loaded.config.problems().iter().map(|p| p.file.as_path()).collect();
    for problem in loaded.report.problems.iter().filter(|p| !grant_files.contains(&p.path.as_path())) {
        eprintln!("{problem}");
        problems += 1;
    }
    for error in &loaded.router_errors {
        eprintln!("{error}");
        problems += 1;
    }
    let router = &loaded.router;
    println!(
        "{} plugin(s) ready: {} tool(s), {} resource(s), {} resource template(s), {} prompt(s)",
        router.served().len(),
        router.tools().len(),
        router.resources().len(),
        router.resource_templates().len(),
        router.prompts().len()
    );
    for plugin in &loaded.report.plugins {
        for line in crate::inspect_report::secret_lines(&plugin.grant) {
            println!("plugin `{}`: secret {line}, read at load", plugin.id);
        }
    }
    if problems == 0 {
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{problems} problem(s) found");
        Ok(ExitCode::from(1))
    }
}

async fn inspect(file: &Path, common: &CommonArgs) -> Result<ExitCode> {
    let plugins_dir = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let config = crate::config::Config::load(plugins_dir, common.config.as_deref());
    let runtime = open_runtime(common, &config)?;
    let inspection = crate::runtime::inspect(&runtime, file).await.map_err(|problem| anyhow::anyhow!("{problem}"))?;
    let id = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let grant = config.grant(&id).ok();
    print!("{}", crate::inspect_report::render(&id, &inspection, grant.as_ref()));
    Ok(ExitCode::SUCCESS)
}

async fn call(plugins_dir: &Path, tool: &str, args: &str, common: &CommonArgs) -> Result<ExitCode> {
    let arguments: serde_json::Value = serde_json::from_str(args).context("--args is not valid JSON (fix: pass a JSON object such as '{\"text\":\"hi\"}')")?;
    if !arguments.is_object() {
        bail!("--args must be a JSON object, for example '{{\"text\":\"hi\"}}'");
    }
    let loaded = load(plugins_dir, common).await?;
    for problem in &loaded.report.problems {
        tracing::warn!("plugin not loaded: {}", crate::escape::Escaped(&problem.to_string()));
    }
    let cx = crate::plugin::CallContext::detached("cli");
    match loaded.router.call_tool(tool, &arguments.to_string(), &cx).await {
        Ok((_, crate::input::Outcome::Complete(result))) => {
            println!("{}", serde_json::to_string_pretty(&result).context("cannot print the result")?);
            Ok(if result.is_error { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Ok((plugin, crate::input::Outcome::InputRequired(required))) => {
            let asked: Vec<String> = required.requests.iter().map(|r| format!("`{}` ({})", r.key, r.method.method())).collect();
            bail!(
                "plugin `{plugin}` needs input from a client ({}), which `paddock call` cannot give: call the tool from an MCP client",
                if asked.is_empty() { "a retry".to_owned() } else { asked.join(", ") }
            )
        }
        Err(crate::router::RouteError::UnknownName { .. }) => {
            let known: Vec<&str> = loaded.router.tools().iter().map(|t| t.name.as_str()).collect();
            bail!("no tool `{tool}` in {} (tools: {})", plugins_dir.display(), if known.is_empty() { "none".to_owned() } else { known.join(", ") })
        }
        Err(crate::router::RouteError::Plugin { plugin, error }) => {
            let result = crate::protocol::CallToolResult::error(format!("plugin `{plugin}`: {error}"));
            println!("{}", serde_json::to_string_pretty(&result).context("cannot print the result")?);
            Ok(ExitCode::from(1))
        }
        Err(other) => bail!("cannot call `{tool}`: {other:?}"),
    }
}
