//! The command line: `serve`, `inspect`, `check`, `lock`, `call`, `new` and `dev`, wired from config to runtime to
//! router to transport. Errors reach the user as one line each with the fix; exit codes are
//! 0 (success), 1 (a check found problems, or a called tool reported an error) and 2 (usage,
//! configuration or startup error).
// Reports (`inspect`, `check`, `call`) go to stdout and one-line errors to stderr: that is the
// CLI's job. Everything else logs through `tracing`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod author;
mod call;
mod observe;
mod replicas;

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
#[allow(clippy::large_enum_variant, reason = "parsed once at start; boxing would only add noise to clap's derive")]
enum Command {
    /// Serve every plugin in a folder over stdio (newline-delimited JSON-RPC on stdin/stdout),
    /// or with --http over Streamable HTTP, HTTP+SSE and WebSocket.
    Serve {
        /// Folder of `*.wasm` plugins (and their optional `<plugin>.toml` grants).
        #[arg(default_value = "plugins")]
        plugins_dir: PathBuf,
        /// File of at least 32 random bytes that seals 2026-07-28 request states; replicas that
        /// share it complete each other's input rounds. Without it a key is drawn at start.
        #[arg(long, value_name = "FILE")]
        state_key_file: Option<PathBuf>,
        /// Memory the host may hold for its clients in all (queued replies, replay logs, bodies
        /// and messages being read), e.g. 2GiB; work past it is refused at once. Default: half of
        /// the machine's (or the cgroup's) memory.
        #[arg(long, value_name = "SIZE", value_parser = parse_size)]
        memory_budget: Option<usize>,
        /// Who requests over stdio are served for (the principal `local NAME` that owns their
        /// tasks and request states). Default: the user running paddock (`$USER`), else `local`.
        #[arg(long, value_name = "NAME", conflicts_with = "http")]
        principal: Option<String>,
        /// Append one audit record per request that reaches policy (tool calls, reads, prompt
        /// gets, completions, task methods) to FILE, as JSON lines: principal, transport,
        /// method, name, plugin, a SHA-256 of the arguments (never their values), outcome and
        /// duration.
        #[arg(long, value_name = "FILE")]
        audit: Option<PathBuf>,
        /// Write the audit records to the log instead (target `audit`).
        #[arg(long, conflicts_with = "audit")]
        audit_log: bool,
        /// Keep the plugins folder live: a plugin file added, replaced or removed, or a grant
        /// changed, is served from the next request on (`events`: file-system events, falling
        /// back to `poll`: reading the folder every 2 s). SIGHUP looks again in any mode.
        #[arg(long, value_enum, value_name = "HOW", num_args = 0..=1, default_value_t = WatchArg::Events, default_missing_value = "events")]
        watch: WatchArg,
        /// Read the plugins folder only at start (and on SIGHUP).
        #[arg(long, conflicts_with = "watch")]
        no_watch: bool,
        /// Load only plugin files whose SHA-256 `paddock.lock` pins (`paddock lock` writes it); a
        /// file that is not pinned is refused, and the version serving keeps serving.
        #[arg(long)]
        locked: bool,
        /// How long nothing may write to a plugin file before it is read (a copy still going on
        /// restarts the wait).
        #[arg(long, value_name = "DURATION", default_value = "300ms", value_parser = parse_duration)]
        watch_settle: std::time::Duration,
        /// How long a 2026-07-28 call of a tool that may run as a task runs before it becomes one
        /// (a call that ends sooner is answered directly).
        #[arg(long, value_name = "DURATION", default_value = "250ms", value_parser = parse_duration)]
        task_after: std::time::Duration,
        /// How long a legacy session waits for its client to answer one round of questions, and
        /// a 2026-07-28 task for its `tasks/update`; then the call ends (the task is cancelled).
        #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
        input_timeout: std::time::Duration,
        #[command(flatten)]
        http: HttpArgs,
        #[command(flatten)]
        observe: observe::ObserveArgs,
        #[command(flatten)]
        replicas: replicas::ReplicaArgs,
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
    /// Record in `paddock.lock` the SHA-256 of every plugin file in a folder and of each tool,
    /// prompt, resource and template definition it exposes; a running server picks it up.
    Lock {
        /// Folder of `*.wasm` plugins (the lock is written there).
        #[arg(default_value = "plugins")]
        plugins_dir: PathBuf,
        /// Record only this plugin (repeatable), keeping the rest of the lock: accepts a held
        /// update, and lets a `--locked` server load a reviewed file.
        #[arg(long, value_name = "PLUGIN")]
        accept: Vec<String>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Make one request without a client and print its result as JSON: a tool call (the
    /// default), a resource read, a prompt get or a completion, against a plugins folder or a
    /// running server's URL. Questions the plugin asks are answered from --answer, or on a
    /// terminal by you.
    Call {
        /// A plugins folder, or a running server's URL (`http://127.0.0.1:8080`, its `/mcp`).
        target: String,
        /// The exposed tool name, as `tools/list` shows it (for example `text_echo`).
        #[arg(required_unless_present_any = ["read", "prompt", "complete"])]
        tool: Option<String>,
        /// The tool's (or the prompt's) arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Read the resource at this URI instead.
        #[arg(long, value_name = "URI", conflicts_with_all = ["tool", "prompt", "complete"])]
        read: Option<String>,
        /// Get this prompt instead (its arguments in --args).
        #[arg(long, value_name = "NAME", conflicts_with_all = ["tool", "complete"])]
        prompt: Option<String>,
        /// Complete an argument of `prompt:NAME` or `resource:URI-TEMPLATE` instead (with
        /// --argument).
        #[arg(long, value_name = "REF", requires = "argument", conflicts_with = "tool")]
        complete: Option<String>,
        /// The argument being completed and what is typed so far, as NAME=VALUE.
        #[arg(long, value_name = "NAME=VALUE")]
        argument: Option<String>,
        /// The answer to a question the plugin asks, by its key (repeatable): a form's fields as
        /// a JSON object (or `decline`, `cancel`), `accept` for a page to visit, the model's text
        /// for a sampling request, a JSON array of URIs for roots.
        #[arg(long = "answer", value_name = "KEY=VALUE")]
        answers: Vec<String>,
        /// The bearer token for a server URL (default: PADDOCK_HTTP_TOKEN).
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Make a new plugin project, ready to build: a tool with structured output, a resource
    /// template, a prompt, a question to the user, a grant file and unit tests.
    New {
        /// The plugin's name: its crate, and the id it is served as.
        name: String,
        /// What the project starts with.
        #[arg(long, value_enum, default_value_t = author::Template::Full)]
        template: author::Template,
        /// Where to make it (default: the current folder).
        #[arg(long, value_name = "DIR", default_value = ".")]
        dir: PathBuf,
        /// The guest SDK (`paddock-sdk`) to depend on (default: PADDOCK_SDK, else the one this
        /// paddock was built with).
        #[arg(long, value_name = "DIR")]
        sdk: Option<PathBuf>,
    },
    /// Build a plugin project, check it, and serve it (stdio, or --http); on every save it is
    /// built and checked again and the running server swaps the new build in.
    Dev {
        /// The plugin project (its Cargo.toml's folder).
        #[arg(default_value = ".")]
        project: PathBuf,
        /// Serve over HTTP on this address instead of stdio.
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8080")]
        http: Option<std::net::SocketAddr>,
        #[command(flatten)]
        common: CommonArgs,
    },
}

/// How the plugins folder is watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum WatchArg {
    /// File-system events, falling back to polling where they are not available.
    Events,
    /// Read the folder every 2 s (for file systems without events, such as some network mounts).
    Poll,
}

impl From<WatchArg> for crate::folder::watch::Watch {
    fn from(arg: WatchArg) -> Self {
        match arg {
            WatchArg::Events => crate::folder::watch::Watch::Events,
            WatchArg::Poll => crate::folder::watch::Watch::Poll,
        }
    }
}

/// The HTTP listener's options.
#[derive(Debug, clap::Args)]
struct HttpArgs {
    /// Serve over HTTP instead of stdio, on this address (default 127.0.0.1:8080): `/mcp`
    /// (Streamable HTTP), `/sse` (HTTP+SSE), `/ws` (WebSocket), `/healthz`, `/readyz`.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8080")]
    http: Option<std::net::SocketAddr>,
    /// File whose first line is the bearer token every request must carry (required to listen on
    /// a non-loopback address). The token may instead be given in PADDOCK_HTTP_TOKEN.
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// TOML file of named bearer tokens, each a `[[token]]` table with `name`, `sha256` (the
    /// token's SHA-256 as 64 hex digits; the token itself is never stored) and optional `scopes`.
    /// A request is served for the holder of the token it carries (the principal `token NAME`).
    #[arg(long, value_name = "FILE", requires = "http")]
    tokens: Option<PathBuf>,
    /// The OAuth 2.1 issuer whose access tokens are accepted (their exact `iss`): the listener
    /// becomes a resource server. The OAuth settings may instead be in `[auth]` of paddock.toml;
    /// a flag wins over its key.
    #[arg(long, value_name = "URL", requires = "http")]
    oauth_issuer: Option<String>,
    /// The canonical URL of this server's /mcp endpoint, as clients reach it (RFC 9728
    /// `resource`, and the default accepted audience), e.g. `https://mcp.example.com/mcp`.
    #[arg(long, value_name = "URL", requires = "http")]
    resource: Option<String>,
    /// An accepted token audience (`aud`, compared exactly; repeatable). Default: --resource.
    #[arg(long, value_name = "AUD", requires = "http")]
    oauth_audience: Vec<String>,
    /// The issuer's JWKS URL (https, or http to a loopback address).
    #[arg(long, value_name = "URL", requires = "http", conflicts_with = "oauth_jwks_file")]
    oauth_jwks_url: Option<String>,
    /// A file holding the issuer's JWKS.
    #[arg(long, value_name = "FILE", requires = "http")]
    oauth_jwks_file: Option<PathBuf>,
    /// Accepted signature algorithms, comma-separated (default and most: RS256,ES256,EdDSA; none
    /// and HS* are never accepted).
    #[arg(long, value_name = "ALGS", value_delimiter = ',', requires = "http")]
    oauth_algorithms: Vec<String>,
    /// Tolerance for clock skew in `exp` and `nbf` (default 60s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "http")]
    oauth_leeway: Option<std::time::Duration>,
    /// A scope every OAuth token must grant (repeatable); a token without it gets 403
    /// `insufficient_scope`.
    #[arg(long, value_name = "SCOPE", requires = "http")]
    oauth_scope: Vec<String>,
    /// The claim listing the token subject's groups (default `groups`).
    #[arg(long, value_name = "CLAIM", requires = "http")]
    oauth_groups_claim: Option<String>,
    /// The shortest time between two fetches of the JWKS (default 60s): a token with an unknown
    /// `kid` asks for one.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "http")]
    oauth_jwks_refresh: Option<std::time::Duration>,
    /// A `Host` to accept besides loopback names (repeatable): the name clients use to reach
    /// this server, e.g. `mcp.example.com` or `mcp.example.com:8443`.
    #[arg(long, value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
    /// A browser `Origin` to accept besides loopback ones (repeatable), e.g. `https://app.example.com`.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// Legacy sessions (Streamable HTTP and HTTP+SSE) held at once.
    #[arg(long, value_name = "N", default_value_t = 1024, requires = "http")]
    max_sessions: usize,
    /// Connections open at once.
    #[arg(long, value_name = "N", default_value_t = 1024, requires = "http")]
    max_connections: usize,
    /// A legacy session unused for this long ends (e.g. 30m, 90s, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_duration, requires = "http")]
    session_idle: std::time::Duration,
    /// Interval of SSE keep-alive comments and WebSocket pings; a WebSocket client silent for
    /// three intervals (no pong) is closed.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration, requires = "http")]
    keep_alive: std::time::Duration,
    /// How long in-flight calls may run on after SIGTERM or SIGINT.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration, requires = "http")]
    shutdown_grace: std::time::Duration,
    /// How long a request body may take to arrive in full, and a WebSocket message once its
    /// first frame began.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, requires = "http")]
    body_timeout: std::time::Duration,
    /// The longest a stream stays open (GET stream, HTTP+SSE stream, `subscriptions/listen`);
    /// then it ends and its client reconnects.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration, requires = "http")]
    max_stream_lifetime: std::time::Duration,
    /// Connections one client (address) may hold at once. Default: an eighth of
    /// --max-connections, at least 8.
    #[arg(long, value_name = "N", requires = "http")]
    max_connections_per_client: Option<usize>,
    /// Legacy sessions one client may hold at once. Default: an eighth of --max-sessions, at
    /// least 8.
    #[arg(long, value_name = "N", requires = "http")]
    max_sessions_per_client: Option<usize>,
    /// Legacy sessions one client may open at once before its rate applies.
    #[arg(long, value_name = "N", default_value_t = 64, requires = "http")]
    session_burst_per_client: u32,
    /// Legacy sessions one client may open per second, past its burst.
    #[arg(long, value_name = "N", default_value_t = 10, requires = "http")]
    sessions_per_second_per_client: u32,
    /// Long-lived streams one client may hold open at once.
    #[arg(long, value_name = "N", default_value_t = 64, requires = "http")]
    max_streams_per_client: usize,
    /// A proxy (address or CIDR, repeatable) whose `X-Forwarded-For` names the client; its own
    /// connections are not held to the per-client cap.
    #[arg(long, value_name = "CIDR", requires = "http")]
    trusted_proxy: Vec<ipnet::IpNet>,
}

/// A size on the command line that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a size (e.g. 512MiB, 2GiB, or a number of bytes)")]
struct SizeError(String);

/// A size such as `512MiB`, `2GiB`, `64KiB` or a number of bytes.
fn parse_size(text: &str) -> Result<usize, SizeError> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: usize = number.parse().map_err(|_| SizeError(text.to_owned()))?;
    let shift = match unit.trim() {
        "" | "B" => 0,
        "KiB" | "K" => 10,
        "MiB" | "M" => 20,
        "GiB" | "G" => 30,
        _ => return Err(SizeError(text.to_owned())),
    };
    number.checked_mul(1 << shift).ok_or_else(|| SizeError(text.to_owned()))
}

/// A duration on the command line that cannot be read.
#[derive(Debug, thiserror::Error)]
enum DurationError {
    #[error("`{0}` is not a duration (e.g. 500ms, 90s, 30m, 2h)")]
    NotANumber(String),
    #[error("unknown unit `{0}` (use ms, s, m or h)")]
    UnknownUnit(String),
}

/// A duration such as `500ms`, `90s`, `30m` or `2h` (a bare number is seconds).
fn parse_duration(text: &str) -> Result<std::time::Duration, DurationError> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| DurationError::NotANumber(text.to_owned()))?;
    let millis = match unit.trim() {
        "ms" => number,
        "" | "s" => number.saturating_mul(1000),
        "m" => number.saturating_mul(60_000),
        "h" => number.saturating_mul(3_600_000),
        other => return Err(DurationError::UnknownUnit(other.to_owned())),
    };
    Ok(std::time::Duration::from_millis(millis))
}

#[derive(Debug, Clone, clap::Args)]
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
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,paddock=info,plugin=info"));
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
        Command::Serve {
            plugins_dir,
            state_key_file,
            memory_budget,
            principal,
            audit,
            audit_log,
            watch,
            no_watch,
            locked,
            watch_settle,
            task_after,
            input_timeout,
            http,
            observe,
            replicas,
            common,
        } => {
            let _metrics = observe::start(&observe).await?;
            let _otlp = observe::start_otlp(&observe).await?;
            let watch = if no_watch { crate::folder::watch::Watch::Off } else { watch.into() };
            let audit = match (audit, audit_log) {
                (Some(path), _) => crate::audit::Audit::to_file(&path)?,
                (None, true) => crate::audit::Audit::to_log(),
                (None, false) => crate::audit::Audit::off(),
            };
            let budget = crate::budget::Budget::new(memory_budget.unwrap_or_else(crate::budget::Budget::for_machine));
            tokio::spawn(Arc::clone(&budget).return_freed_memory(std::time::Duration::from_secs(1)));
            let material = replicas::key_material(state_key_file.as_deref())?;
            let replica = replicas::replica(&replicas, &material)?;
            let store = replicas::store(&replicas, &material, state_key_file.is_some()).await?;
            if input_timeout.is_zero() {
                bail!("--input-timeout must be longer than zero");
            }
            let limits = crate::mcp::ServerLimits { task_after, input_timeout, ..crate::mcp::ServerLimits::default() };
            let serving = Serving { budget, audit, watch, settle: watch_settle, locked, material, replica, store, limits };
            match http.http {
                Some(addr) => serve_http(addr, &http, &plugins_dir, &common, serving).await,
                None => serve(&plugins_dir, &common, serving, principal.as_deref()).await,
            }
        }
        Command::Inspect { file, common } => inspect(&file, &common).await,
        Command::Check { plugins_dir, common } => check(&plugins_dir, &common).await,
        Command::Lock { plugins_dir, accept, common } => lock(&plugins_dir, &accept, &common).await,
        Command::Call { target, tool, args, read, prompt, complete, argument, answers, token_file, common } => {
            let arguments = || -> Result<serde_json::Map<String, serde_json::Value>> {
                match serde_json::from_str(&args) {
                    Ok(serde_json::Value::Object(map)) => Ok(map),
                    Ok(_) => bail!("--args must be a JSON object, for example '{{\"text\":\"hi\"}}'"),
                    Err(_) => bail!("--args is not valid JSON (fix: pass a JSON object such as '{{\"text\":\"hi\"}}')"),
                }
            };
            let ask = match (tool, read, prompt, complete) {
                (_, Some(uri), _, _) => call::Ask::Read { uri },
                (_, _, Some(name), _) => call::Ask::Prompt { name, arguments: arguments()? },
                (_, _, _, Some(target)) => {
                    let (name, value) = argument.as_deref().and_then(|a| a.split_once('=')).context("--argument takes NAME=VALUE")?;
                    call::Ask::Complete { target, argument: name.to_owned(), value: value.to_owned() }
                }
                (Some(name), _, _, _) => call::Ask::Tool { name, arguments: arguments()? },
                (None, None, None, None) => bail!("name a tool, or pass --read, --prompt or --complete"),
            };
            let answers = call::parse_answers(&answers)?;
            if target.starts_with("http://") || target.starts_with("https://") {
                let token = match token_file {
                    Some(path) => Some(
                        std::fs::read_to_string(&path)
                            .with_context(|| format!("cannot read {}", path.display()))?
                            .lines()
                            .next()
                            .unwrap_or_default()
                            .trim()
                            .to_owned(),
                    ),
                    None => std::env::var("PADDOCK_HTTP_TOKEN").ok(),
                };
                call::at_url(&target, token.as_deref(), &ask, &answers).await
            } else {
                let folder = PathBuf::from(&target);
                let loaded = load(&folder, &common, crate::runtime::RuntimeOptions::default().host_descriptors, Load::Once).await?;
                for problem in &loaded.problems {
                    tracing::warn!("plugin not loaded: {}", crate::escape::Escaped(&problem.to_string()));
                }
                call::in_folder(&loaded.router, &folder, &ask, &answers).await
            }
        }
        Command::New { name, template, dir, sdk } => author::new_project(&name, &dir, template, sdk.as_deref()),
        Command::Dev { project, http, common } => author::dev(&project, http, &common).await,
    }
}

/// Config and plugins, loaded the same way for every command.
struct Loaded {
    config: crate::config::Config,
    /// Files not loaded, and why.
    problems: Vec<crate::runtime::LoadProblem>,
    /// What loaded, but not as configured.
    warnings: Vec<String>,
    plugins: Vec<crate::runtime::LoadedPlugin>,
    router: crate::router::Router,
    router_errors: Vec<crate::router::RouterError>,
    /// The folder, to keep serving it live.
    folder: Arc<crate::folder::Folder>,
}

/// The runtime for the plugins of `plugins_dir`: its pool sized to what they can run at once
/// (for a live folder, with room for plugins added later and for versions being replaced).
fn open_runtime(common: &CommonArgs, config: &crate::config::Config, plugins_dir: &Path, host_descriptors: u64, live: bool) -> Result<crate::runtime::Runtime> {
    let wanted = crate::runtime::instances_for_folder(plugins_dir, config);
    let max_instances = if live { wanted.saturating_mul(2).clamp(LIVE_INSTANCES, crate::runtime::MAX_INSTANCES) } else { wanted };
    let options = crate::runtime::RuntimeOptions {
        host_descriptors,
        cache_dir: common.cache_dir.clone(),
        max_memory: config.largest_memory_limit(),
        max_instances,
        ..Default::default()
    };
    crate::runtime::Runtime::new(options).context("cannot start the WebAssembly runtime")
}

/// The fewest instances the pool of a live folder holds: room for plugins added while serving.
const LIVE_INSTANCES: u32 = 128;

/// How a folder is loaded.
#[derive(Debug, Clone, Copy)]
enum Load {
    /// Once, as it is (`check`, `call`).
    Once,
    /// Once, ignoring the lock (`lock` writes a new one).
    ForLock,
    /// To keep serving it live, reading a changed file once it has been left alone for
    /// `settle`; `locked` loads only files the lock pins.
    Live { settle: std::time::Duration, locked: bool },
}

async fn load(plugins_dir: &Path, common: &CommonArgs, host_descriptors: u64, how: Load) -> Result<Loaded> {
    if !plugins_dir.is_dir() {
        bail!("{}", crate::folder::FolderError::Missing(plugins_dir.to_path_buf()));
    }
    let config = crate::config::Config::load(plugins_dir, common.config.as_deref());
    let runtime = open_runtime(common, &config, plugins_dir, host_descriptors, matches!(how, Load::Live { .. }))?;
    let folder = crate::folder::Folder::new(runtime, plugins_dir, common.config.as_deref());
    let folder = Arc::new(match how {
        Load::Once => folder,
        Load::ForLock => folder.ignoring_lock(),
        Load::Live { settle, locked: false } => folder.with_settle(settle).from_records(),
        Load::Live { settle, locked: true } => folder.with_settle(settle).locked().from_records(),
    });
    let look = folder.first().await?;
    let router = look.router.context("the first look at the plugins folder made no router")?;
    Ok(Loaded {
        config: look.config,
        problems: look.problems,
        warnings: look.warnings,
        plugins: look.loaded,
        router,
        router_errors: look.router_errors,
        folder,
    })
}

/// What every transport serves with: the memory budget, the audit trail, how the folder is watched.
struct Serving {
    budget: Arc<crate::budget::Budget>,
    audit: crate::audit::Audit,
    watch: crate::folder::watch::Watch,
    /// How long a plugin file must be left alone before it is read.
    settle: std::time::Duration,
    /// Only files `paddock.lock` pins are loaded.
    locked: bool,
    /// The shared key material (`--state-key-file`, or drawn at start).
    material: Vec<u8>,
    /// This replica.
    replica: Arc<crate::replica::Replica>,
    /// The store replicas share, if any.
    store: Option<Arc<crate::store::Store>>,
    /// The time limits of requests that wait.
    limits: crate::mcp::ServerLimits,
}

async fn serve(plugins_dir: &Path, common: &CommonArgs, serving: Serving, principal: Option<&str>) -> Result<ExitCode> {
    let watch = serving.watch;
    let (server, folder) = load_server(plugins_dir, common, "stdio", crate::runtime::RuntimeOptions::default().host_descriptors, serving).await?;
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(crate::folder::watch::keep_live(folder, Arc::clone(&server), watch, stop.clone()));
    let _stop_watching = stop.drop_guard();
    let name = principal.map(str::to_owned).or_else(|| std::env::var("USER").ok().filter(|user| !user.is_empty())).unwrap_or_else(|| "local".to_owned());
    let principal = crate::identity::Principal::local(&name);
    let audit = server.callers().audit.clone();
    let served = crate::transport::stdio::serve_process(server, principal).await.context("stdio transport failed");
    audit.drain(AUDIT_DRAIN).await;
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Serves over HTTP: the listener is bound (and answers `/healthz`) before the plugins load,
/// and is ready once they have; SIGTERM or SIGINT shuts it down gracefully.
async fn serve_http(addr: std::net::SocketAddr, args: &HttpArgs, plugins_dir: &Path, common: &CommonArgs, setup: Serving) -> Result<ExitCode> {
    let (budget, watch) = (Arc::clone(&setup.budget), setup.watch);
    use crate::transport::http::{AccessPolicy, BearerToken, HttpLimits, HttpListener, HttpOptions, PeerLimits};
    let mut tokens = match &args.tokens {
        Some(path) => BearerToken::list_from_file(path)?,
        None => Vec::new(),
    };
    let single = match (&args.token_file, std::env::var("PADDOCK_HTTP_TOKEN")) {
        (Some(path), _) => Some(BearerToken::from_file(path)?),
        (None, Ok(value)) => Some(BearerToken::new(&value).context("PADDOCK_HTTP_TOKEN")?),
        (None, Err(_)) => None,
    };
    if let Some(single) = single {
        if tokens.iter().any(|t| t.principal() == single.principal()) {
            anyhow::bail!("the tokens file names a token `default`, which is the name of the --token-file or PADDOCK_HTTP_TOKEN token (fix: rename it)");
        }
        tokens.push(single);
    }
    let oauth = oauth_verifier(args, plugins_dir, common)?;
    let access = AccessPolicy::for_address(addr, args.allow_host.clone(), args.allow_origin.clone(), tokens, oauth)?;
    if access.any_host {
        tracing::warn!("listening on a non-loopback address without --allow-host: any Host is accepted (the bearer token protects the server)");
    }
    if args.keep_alive.is_zero() {
        bail!("--keep-alive must be longer than zero");
    }
    if args.body_timeout.is_zero() || args.max_stream_lifetime.is_zero() {
        bail!("--body-timeout and --max-stream-lifetime must be longer than zero");
    }
    let limits = HttpLimits {
        max_sessions: args.max_sessions,
        max_connections: args.max_connections,
        session_idle: args.session_idle,
        keep_alive: args.keep_alive,
        body_timeout: args.body_timeout,
        max_stream_lifetime: args.max_stream_lifetime,
        ..HttpLimits::default()
    };
    let mut peers = PeerLimits::for_totals(args.max_connections, args.max_sessions);
    peers.connections = args.max_connections_per_client.unwrap_or(peers.connections).max(1);
    peers.sessions = args.max_sessions_per_client.unwrap_or(peers.sessions).max(1);
    peers.streams = args.max_streams_per_client.max(1);
    peers.session_burst = args.session_burst_per_client.max(1);
    peers.sessions_per_second = args.sessions_per_second_per_client.max(1);
    peers.trusted_proxies = args.trusted_proxy.clone();
    // A client's bodies being read: an eighth of the budget, and at least one whole body.
    peers.body_bytes = (budget.limit() / 8).max(crate::transport::stdio::MAX_LINE);
    tracing::info!(
        budget_mib = budget.limit() >> 20,
        connections_per_client = peers.connections,
        sessions_per_client = peers.sessions,
        streams_per_client = peers.streams,
        "limits for clients"
    );
    let replica = Arc::clone(&setup.replica);
    let options = HttpOptions { access, limits, shutdown_grace: args.shutdown_grace, peers, budget: Arc::clone(&budget), replica };
    let listener = HttpListener::bind(addr, options).await.with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr().context("cannot read the bound address")?;
    tracing::info!(address = %bound, "listening on http://{bound} (/mcp, /sse, /ws, /healthz, /readyz)");
    let readiness = listener.readiness();
    let stop = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn(listener.run(stop.clone()));
    tokio::spawn(stop_on_signal(stop.clone()));
    let host_descriptors = crate::transport::http::host_descriptors(args.max_connections);
    let server = match load_server(plugins_dir, common, "HTTP", host_descriptors, setup).await {
        Ok((server, folder)) => {
            tokio::spawn(crate::folder::watch::keep_live(folder, Arc::clone(&server), watch, stop.clone()));
            server
        }
        Err(err) => {
            stop.cancel();
            let _ = serving.await;
            return Err(err);
        }
    };
    let audit = server.callers().audit.clone();
    readiness.serve(server);
    let served = serving.await.context("the HTTP listener failed");
    audit.drain(AUDIT_DRAIN).await;
    served?;
    Ok(ExitCode::SUCCESS)
}

/// How long a stopping server waits for its audit records to be written.
const AUDIT_DRAIN: std::time::Duration = std::time::Duration::from_secs(5);

/// The OAuth verifier, when `[auth]` or the `--oauth-*` flags configure one (a flag wins over
/// its key); its first key-set load is started.
fn oauth_verifier(args: &HttpArgs, plugins_dir: &Path, common: &CommonArgs) -> Result<Option<Arc<crate::identity::verifier::Verifier>>> {
    use crate::config::auth::{AuthDraft, flag_of};
    let flags = AuthDraft {
        issuer: args.oauth_issuer.clone(),
        resource: args.resource.clone(),
        audiences: (!args.oauth_audience.is_empty()).then(|| args.oauth_audience.clone()),
        jwks_url: args.oauth_jwks_url.clone(),
        jwks_file: args.oauth_jwks_file.clone(),
        algorithms: (!args.oauth_algorithms.is_empty()).then(|| args.oauth_algorithms.clone()),
        leeway: args.oauth_leeway,
        scopes: (!args.oauth_scope.is_empty()).then(|| args.oauth_scope.clone()),
        groups_claim: args.oauth_groups_claim.clone(),
        jwks_refresh: args.oauth_jwks_refresh,
    };
    let config = crate::config::Config::load(plugins_dir, common.config.as_deref());
    let auth_errors: Vec<String> = config.global_errors().filter(|e| e.key.starts_with("auth")).map(ToString::to_string).collect();
    if !auth_errors.is_empty() {
        bail!("the OAuth settings are invalid:\n{}", auth_errors.join("\n"));
    }
    let settings = match config.auth().clone().overridden_by(flags).build() {
        Ok(Some(settings)) => settings,
        Ok(None) => return Ok(None),
        Err(problems) => {
            let lines: Vec<String> = problems.iter().map(|p| format!("{} (`[auth] {}`): {} (fix: {})", flag_of(p.key), p.key, p.message, p.fix)).collect();
            bail!("the OAuth settings are invalid:\n{}", lines.join("\n"));
        }
    };
    tracing::info!(issuer = %settings.issuer, resource = %settings.resource, audiences = ?settings.audiences, scopes = ?settings.required_scopes, "OAuth 2.1 resource server");
    let verifier = Arc::new(crate::identity::verifier::Verifier::new(settings));
    verifier.start();
    Ok(Some(verifier))
}

/// Cancels `stop` on SIGTERM or SIGINT.
async fn stop_on_signal(stop: tokio_util::sync::CancellationToken) {
    let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(signal) => signal,
        Err(err) => {
            tracing::error!(error = %err, "cannot listen for SIGTERM");
            return;
        }
    };
    tokio::select! {
        _ = terminate.recv() => tracing::info!("SIGTERM received"),
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received"),
    }
    stop.cancel();
}

/// Loads config and plugins for serving, logging every problem, and builds the session core.
async fn load_server(
    plugins_dir: &Path,
    common: &CommonArgs,
    over: &str,
    host_descriptors: u64,
    serving: Serving,
) -> Result<(Arc<crate::session::ServerState>, Arc<crate::folder::Folder>)> {
    let Serving { budget, audit, settle, locked, material, replica, store, limits, .. } = serving;
    let loaded = load(plugins_dir, common, host_descriptors, Load::Live { settle, locked }).await?;
    let global: Vec<String> = loaded.config.global_errors().map(ToString::to_string).collect();
    if !global.is_empty() {
        bail!("the configuration is invalid:\n{}", global.join("\n"));
    }
    for problem in loaded.config.problems().iter().filter(|p| p.plugin.is_some() || p.severity == crate::config::Severity::Warning) {
        tracing::warn!("{problem}");
    }
    for problem in &loaded.problems {
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
        "serving over {over}"
    );
    let state_key = crate::input::StateKey::from_material(&material);
    for (rule, pattern) in loaded.config.access().unmatched(&|kind| served_names(&router, kind)) {
        tracing::warn!("{}", unmatched_rule(rule, pattern));
    }
    let callers =
        crate::mcp::CallerPolicy { access: loaded.config.access().clone(), rates: crate::rate_limits::RateLimits::new(loaded.config.rates().clone()), audit };
    let server = crate::session::ServerState::for_replica(router, state_key, limits, budget, callers, replica, store);
    server.set_drift_policies(loaded.config.drift_policies().clone());
    // Plugins served from their recorded catalogs have their lists read again once loaded.
    server.confirm_recorded_lists();
    // The feed runs as long as the process: it holds the server only weakly. Tasks other
    // replicas handed over are claimed and run here until this replica hands over its own.
    drop(server.follow_store());
    tokio::spawn(crate::mcp::claim_orphans(Arc::clone(&server)));
    let mut problems: Vec<crate::mcp::ServingProblem> =
        loaded.problems.iter().map(|p| crate::mcp::ServingProblem { path: p.path.display().to_string(), reason: p.reason.clone() }).collect();
    problems.extend(loaded.router_errors.iter().map(|e| crate::mcp::ServingProblem { path: plugins_dir.display().to_string(), reason: e.to_string() }));
    server.set_problems(problems);
    observe::sample(&server, loaded.folder.runtime());
    Ok((server, loaded.folder))
}

/// The exposed names of `kind` a router serves (a resource's URI, a template's URI template).
fn served_names(router: &crate::router::Router, kind: crate::policy::ItemKind) -> Vec<String> {
    use crate::policy::ItemKind;
    match kind {
        ItemKind::Tool => router.tools().iter().map(|t| t.name.clone()).collect(),
        ItemKind::Prompt => router.prompts().iter().map(|p| p.name.clone()).collect(),
        ItemKind::Resource => {
            router.resources().iter().map(|r| r.uri.clone()).chain(router.resource_templates().iter().map(|t| t.uri_template.clone())).collect()
        }
    }
}

/// A policy rule (or one of its patterns) that matches nothing served, said with the fix.
fn unmatched_rule(rule: &str, pattern: Option<(crate::policy::ItemKind, &str)>) -> String {
    match pattern {
        None => format!("warning: access rule `{rule}` names no tools, resources or prompts, so it matches nothing (fix: add patterns or remove it)"),
        Some((kind, pattern)) => {
            let kind = match kind {
                crate::policy::ItemKind::Tool => "tools",
                crate::policy::ItemKind::Resource => "resources",
                crate::policy::ItemKind::Prompt => "prompts",
            };
            format!("warning: access rule `{rule}`: the {kind} pattern `{pattern}` matches nothing served (fix: correct the pattern or remove it)")
        }
    }
}

/// The plugin a load problem is about, when it is about a plugin file: the file's stem, which
/// is the plugin's id.
fn problem_plugin(problem: &crate::runtime::LoadProblem) -> Option<&str> {
    let path = &problem.path;
    path.extension().is_some_and(|e| e == "wasm").then(|| path.file_stem().and_then(|s| s.to_str())).flatten()
}

async fn check(plugins_dir: &Path, common: &CommonArgs) -> Result<ExitCode> {
    let loaded = load(plugins_dir, common, crate::runtime::RuntimeOptions::default().host_descriptors, Load::Once).await?;
    let mut problems = 0usize;
    for problem in loaded.config.problems() {
        eprintln!("{problem}");
        if problem.severity == crate::config::Severity::Error {
            problems += 1;
        }
    }
    // A plugin left out for a bad grant was reported above, key by key, with its grant file.
    let grant_files: Vec<&Path> = loaded.config.problems().iter().map(|p| p.file.as_path()).collect();
    for problem in loaded.problems.iter().filter(|p| !grant_files.contains(&p.path.as_path())) {
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
    for (rule, pattern) in loaded.config.access().unmatched(&|kind| served_names(router, kind)) {
        println!("{}", unmatched_rule(rule, pattern));
    }
    // Loaded, but not as configured: said here as well as in the log.
    for warning in &loaded.warnings {
        println!("warning: {warning}");
    }
    for plugin in &loaded.plugins {
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

/// Writes `paddock.lock` for the folder as it is now: every plugin served, or only `accept`
/// (keeping the rest of the lock).
async fn lock(plugins_dir: &Path, accept: &[String], common: &CommonArgs) -> Result<ExitCode> {
    use crate::folder::{Lock, Locked};
    let loaded = load(plugins_dir, common, crate::runtime::RuntimeOptions::default().host_descriptors, Load::ForLock).await?;
    let path = loaded.folder.lock_file();
    let mut lock = if accept.is_empty() { Lock::new() } else { Lock::read(&path)?.unwrap_or_else(Lock::new) };
    let served: Vec<&str> = loaded.router.served().iter().map(|e| e.plugin.id()).collect();
    for id in accept {
        if !served.contains(&id.as_str()) {
            let why: Vec<String> = loaded
                .problems
                .iter()
                .filter(|p| crate::runtime::plugin_id(&p.path) == *id || p.reason.contains(&format!("`{id}`")))
                .map(ToString::to_string)
                .collect();
            bail!(
                "plugin `{id}` is not served from {}, so there is nothing to accept{}",
                plugins_dir.display(),
                if why.is_empty() { String::new() } else { format!(": {}", why.join("; ")) }
            );
        }
    }
    let mut recorded = 0usize;
    for plugin in loaded.plugins.iter().filter(|p| served.contains(&p.id.as_str()) && (accept.is_empty() || accept.contains(&p.id))) {
        let digest = crate::folder::lock::file_digest(&plugin.path).with_context(|| format!("cannot read {}", plugin.path.display()))?;
        lock.plugins.insert(plugin.id.clone(), Locked::of(&loaded.router, &plugin.id, &digest));
        recorded += 1;
    }
    for problem in &loaded.problems {
        eprintln!("{problem}");
    }
    lock.write(&path)?;
    println!("{}: {recorded} plugin(s) recorded, {} in all", path.display(), lock.plugins.len());
    Ok(ExitCode::SUCCESS)
}

async fn inspect(file: &Path, common: &CommonArgs) -> Result<ExitCode> {
    let plugins_dir = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let config = crate::config::Config::load(plugins_dir, common.config.as_deref());
    let runtime = open_runtime(common, &config, plugins_dir, crate::runtime::RuntimeOptions::default().host_descriptors, false)?;
    let inspection = crate::runtime::inspect(&runtime, file).await.map_err(|problem| anyhow::anyhow!("{problem}"))?;
    let id = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let grant = config.grant(&id).ok();
    print!("{}", crate::inspect_report::render(&id, &inspection, grant.as_ref()));
    Ok(ExitCode::SUCCESS)
}
