//! Test harness for end-to-end tests: finds the built `paddock` binary and plugin components,
//! assembles plugin folders with grants, and drives `paddock serve` over stdio with timeouts.
//!
//! It never builds anything itself: `scripts/test` builds the host and the wasm workspaces
//! first, and a missing artifact is a panic that says which command builds it.

pub mod balancers;
pub mod http;
pub mod redis;
pub mod replicas;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// How long any single wait in an end-to-end test may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(60);

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

/// The `paddock` binary built in the same profile as this test.
pub fn paddock_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("current test executable");
    // target/<profile>/deps/it-<hash> → target/<profile>/paddock
    let profile_dir = exe.parent().and_then(Path::parent).expect("test binary lives in target/<profile>/deps");
    let bin = profile_dir.join("paddock");
    assert!(bin.exists(), "{} is missing: run `cargo test --release --workspace --no-run` (scripts/test does)", bin.display());
    bin
}

/// An installed client runtime named by the environment variable `var` (`scripts/test` installs
/// each and sets its variable). Missing under `CI=true` is a failure; elsewhere the test is
/// skipped with a note naming `what` is missing.
pub fn installed_client(var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(path) => Some(path),
        Err(_) if std::env::var_os("CI").is_some() => panic!("{var} must be set in CI (scripts/test sets it)"),
        Err(_) => {
            #[allow(clippy::print_stderr, reason = "the note a skipped test leaves for whoever runs it")]
            {
                eprintln!("skipped: {var} is not set; run scripts/test to install {what}");
            }
            None
        }
    }
}

/// A program on `PATH` (`scripts/test` installs it from the Debian package `package` when
/// missing). Missing under `CI=true` is a failure; elsewhere the test is skipped with a note.
pub fn installed_tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file()));
    match found {
        Some(path) => Some(path),
        None if std::env::var_os("CI").is_some() => panic!("`{name}` must be installed in CI (scripts/test installs the Debian package `{package}`)"),
        None => {
            #[allow(clippy::print_stderr, reason = "the note a skipped test leaves for whoever runs it")]
            {
                eprintln!("skipped: `{name}` is missing; run scripts/test to install the Debian package `{package}`");
            }
            None
        }
    }
}

/// A loopback port nothing listens on now (for a server the test starts itself).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free loopback port")
}

/// Runs a client script (`tests/clients/<script>`) with `interpreter` and `args`, within `WAIT`;
/// it must succeed, and its last stdout line is its JSON summary. A failure shows both outputs
/// and `context` (for example the server's log).
pub async fn run_client_script(interpreter: &str, script: &str, args: &[&std::ffi::OsStr], context: impl FnOnce() -> String) -> Value {
    let child = Command::new(interpreter)
        .arg(repo_root().join("tests/clients").join(script))
        .args(args)
        .env("PADDOCK_CACHE_DIR", test_cache_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {script}: {e}"));
    let out = tokio::time::timeout(WAIT, child.wait_with_output()).await.expect("the client finished in time").expect("the client ran");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{script} {args:?} failed:\nstdout: {stdout}\nstderr: {stderr}\n{}", context());
    serde_json::from_str(stdout.trim().lines().last().unwrap_or_default()).expect("the client prints a JSON summary")
}

/// A sample plugin component from `sample-plugins/` (`text`, `files`, `fetch`).
pub fn sample_wasm(name: &str) -> PathBuf {
    let path = repo_root().join("sample-plugins/target/wasm32-wasip2/release").join(format!("{name}.wasm"));
    assert!(path.exists(), "{} is missing: run `scripts/build-plugins` (scripts/test does)", path.display());
    path
}

/// A test-only fixture component from `tests/plugins/`.
pub fn fixture_wasm(name: &str) -> PathBuf {
    let path = repo_root().join("tests/plugins/target/wasm32-wasip2/release").join(format!("{}.wasm", name.replace('-', "_")));
    assert!(path.exists(), "{} is missing: run `scripts/build-plugins` (scripts/test does)", path.display());
    path
}

/// A folder serving the conformance plugin (`tests/plugins/conformance`) under the suite's own
/// names: no prefix.
pub fn conformance_plugins() -> PluginDir {
    PluginDir::new().add("conformance", &fixture_wasm("conformance")).write("paddock.toml", "[plugins.conformance]\nexpose = { prefix = \"\" }\n")
}

/// A shared compiled-component cache for tests, so each plugin compiles once per run.
pub fn test_cache_dir() -> PathBuf {
    let dir = repo_root().join("target/paddock-test-cache");
    std::fs::create_dir_all(&dir).expect("create test cache dir");
    dir
}

/// A temporary plugins folder.
#[derive(Debug)]
pub struct PluginDir {
    dir: tempfile::TempDir,
}

impl PluginDir {
    /// An empty folder.
    pub fn new() -> Self {
        PluginDir { dir: tempfile::tempdir().expect("create temp plugin dir") }
    }

    /// The folder's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Copies `wasm` into the folder as `<id>.wasm`.
    pub fn add(self, id: &str, wasm: &Path) -> Self {
        std::fs::copy(wasm, self.path().join(format!("{id}.wasm"))).expect("copy plugin");
        self
    }

    /// Writes a file (for example `paddock.toml`, `<id>.toml` or a broken `.wasm`) into the folder.
    pub fn write(self, name: &str, contents: impl AsRef<[u8]>) -> Self {
        std::fs::write(self.path().join(name), contents).expect("write file in plugin dir");
        self
    }
}

impl Default for PluginDir {
    fn default() -> Self {
        PluginDir::new()
    }
}

/// Runs `paddock` with `args` to completion (with a timeout) and returns (exit code, stdout, stderr).
pub async fn run_paddock(args: &[&str]) -> Result<(i32, String, String)> {
    let child = Command::new(paddock_bin())
        .args(args)
        .env("PADDOCK_CACHE_DIR", test_cache_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("spawn paddock")?;
    let out = tokio::time::timeout(WAIT, child.wait_with_output()).await.context("paddock did not finish in time")??;
    Ok((out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned()))
}

/// `paddock serve DIR` over stdio, driven line by line.
#[derive(Debug)]
pub struct StdioHost {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: i64,
}

impl StdioHost {
    /// Starts `paddock serve <dir>` with extra arguments; stderr is inherited for diagnostics.
    pub fn start(dir: &Path, extra: &[&str]) -> Result<StdioHost> {
        let log = std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".to_owned());
        StdioHost::start_logging(dir, extra, &log, Stdio::inherit())
    }

    /// Starts `paddock serve <dir>` with `RUST_LOG=log` and stderr going to `stderr` (use
    /// `Stdio::piped()` and `take_stderr` to read it, or to leave it undrained).
    pub fn start_logging(dir: &Path, extra: &[&str], log: &str, stderr: Stdio) -> Result<StdioHost> {
        let mut child = Command::new(paddock_bin())
            .arg("serve")
            .arg(dir)
            .args(extra)
            .env("PADDOCK_CACHE_DIR", test_cache_dir())
            .env("RUST_LOG", log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .context("spawn paddock serve")?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().context("stdout")?).lines();
        Ok(StdioHost { child, stdin, stdout, next_id: 1 })
    }

    /// Starts `paddock ARGS` (any command that serves over stdio, such as `dev`) with extra
    /// environment variables; stderr is inherited for diagnostics.
    pub fn start_command(args: &[&std::ffi::OsStr], env: &[(&str, &std::ffi::OsStr)]) -> Result<StdioHost> {
        StdioHost::start_command_logging(args, env, Stdio::inherit())
    }

    /// `start_command`, with stderr going to `stderr` (`Stdio::piped()` and `take_stderr` to
    /// read it).
    pub fn start_command_logging(args: &[&std::ffi::OsStr], env: &[(&str, &std::ffi::OsStr)], stderr: Stdio) -> Result<StdioHost> {
        let mut command = Command::new(paddock_bin());
        command
            .args(args)
            .env("PADDOCK_CACHE_DIR", test_cache_dir())
            .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".to_owned()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().context("spawn paddock")?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().context("stdout")?).lines();
        Ok(StdioHost { child, stdin, stdout, next_id: 1 })
    }

    /// Reads the next line from stdout within `limit`; it must be one JSON value.
    pub async fn recv_within(&mut self, limit: Duration) -> Result<Value> {
        let line = tokio::time::timeout(limit, self.stdout.next_line()).await.context("no message from paddock in time")??.context("paddock closed stdout")?;
        serde_json::from_str(&line).with_context(|| format!("stdout line is not JSON: {line:?}"))
    }

    /// The child's stderr, when it was started with `Stdio::piped()`.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Closes stdin without reading anything more; returns the exit code once the process has
    /// exited, waiting at most `limit`.
    pub async fn close_within(mut self, limit: Duration) -> Result<i32> {
        drop(self.stdin.take());
        let status = tokio::time::timeout(limit, self.child.wait()).await.context("paddock did not exit in time after EOF")??;
        Ok(status.code().unwrap_or(-1))
    }

    /// Writes one raw line.
    pub async fn send_line(&mut self, line: &str) -> Result<()> {
        let stdin = self.stdin.as_mut().context("stdin already closed")?;
        stdin.write_all(line.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await?;
        Ok(())
    }

    /// Writes raw bytes followed by a newline (for lines that are not UTF-8).
    pub async fn send_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let stdin = self.stdin.as_mut().context("stdin already closed")?;
        stdin.write_all(bytes).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await?;
        Ok(())
    }

    /// Reads the next line from stdout; it must be one JSON value.
    pub async fn recv(&mut self) -> Result<Value> {
        let line = tokio::time::timeout(WAIT, self.stdout.next_line()).await.context("no message from paddock in time")??.context("paddock closed stdout")?;
        serde_json::from_str(&line).with_context(|| format!("stdout line is not JSON: {line:?}"))
    }

    /// Sends a request and returns its response, skipping notifications.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let msg = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&msg.to_string()).await?;
        loop {
            let reply = self.recv().await?;
            if reply.get("id") == Some(&Value::from(id)) {
                return Ok(reply);
            }
            if reply.get("method").is_none() {
                bail!("unexpected reply while waiting for id {id}: {reply}");
            }
        }
    }

    /// Performs the legacy handshake at `version`.
    pub async fn initialize(&mut self, version: &str) -> Result<Value> {
        let reply = self
            .request("initialize", serde_json::json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "paddock-tests", "version": "0"}}))
            .await?;
        self.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await?;
        Ok(reply)
    }

    /// Calls a tool (legacy session) and returns the `result` object.
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the server is running")
    }

    pub async fn call_tool(&mut self, name: &str, arguments: Value) -> Result<Value> {
        let reply = self.request("tools/call", serde_json::json!({"name": name, "arguments": arguments})).await?;
        reply.get("result").cloned().with_context(|| format!("tools/call {name} failed: {reply}"))
    }

    /// Closes stdin and waits for the process to exit; returns its exit code.
    pub async fn close(mut self) -> Result<i32> {
        drop(self.stdin.take());
        let status = tokio::time::timeout(WAIT, self.child.wait()).await.context("paddock did not exit after EOF")??;
        Ok(status.code().unwrap_or(-1))
    }
}

/// The text of the first content block of a `tools/call` result.
pub fn first_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}
