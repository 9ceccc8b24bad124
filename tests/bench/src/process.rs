//! Server processes the harness starts: killed when dropped, their stderr kept line by line (for
//! the address an HTTP server reports, progress lines, and error messages), and a watchdog that
//! kills a server which stops answering, so a stuck server fails the run instead of hanging it.

use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// How long any single wait on a server may take before the run fails.
pub const WAIT: Duration = Duration::from_secs(60);

/// A child process that is killed (and reaped) when dropped.
pub struct Process {
    child: Child,
    /// What it wrote to stderr so far, when captured.
    pub stderr: StderrLog,
    /// Set while the child may be signalled by pid; cleared (under the lock) before it is reaped.
    alive: Arc<Mutex<bool>>,
}

impl Process {
    /// Starts `command` (program and arguments) with captured stderr; stdin and stdout are pipes
    /// when `stdio_pipes`, else closed and discarded.
    pub fn spawn(command: &[String], stdio_pipes: bool) -> Result<Process> {
        let (program, args) = command.split_first().context("an empty command")?;
        let pipe = || if stdio_pipes { Stdio::piped() } else { Stdio::null() };
        let mut child = Command::new(program)
            .args(args)
            .stdin(pipe())
            .stdout(pipe())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("start {}", command.join(" ")))?;
        let stderr = StderrLog::capture(child.stderr.take().context("stderr")?);
        Ok(Process { child, stderr, alive: Arc::new(Mutex::new(true)) })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child itself (for its pipes).
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Kills the process if nothing calls [`Progress::advance`] for `limit`.
    pub fn watchdog(&self, limit: Duration) -> Progress {
        let progress = Progress(Arc::new(ProgressState { count: AtomicU64::new(0), fired: AtomicBool::new(false), done: (Mutex::new(false), Condvar::new()) }));
        let state = Arc::clone(&progress.0);
        let alive = Arc::clone(&self.alive);
        let pid = self.pid();
        std::thread::spawn(move || {
            let (done, wake) = &state.done;
            let mut seen = state.count.load(Ordering::Relaxed);
            let mut since = Instant::now();
            let mut finished = done.lock().expect("watchdog");
            while !*finished {
                finished = wake.wait_timeout(finished, Duration::from_millis(250)).expect("watchdog").0;
                let now = state.count.load(Ordering::Relaxed);
                if now != seen {
                    (seen, since) = (now, Instant::now());
                } else if since.elapsed() > limit && !*finished {
                    state.fired.store(true, Ordering::Relaxed);
                    signal(&alive, pid, rustix::process::Signal::KILL);
                    return;
                }
            }
        });
        progress
    }

    /// Asks the process to stop (SIGTERM), then kills it after `grace`.
    pub fn terminate(mut self, grace: Duration) -> Result<()> {
        signal(&self.alive, self.pid(), rustix::process::Signal::TERM);
        self.wait(grace)
    }

    /// Waits up to `limit` for the process to exit by itself (after its stdin closed), else kills it
    /// and fails.
    pub fn wait(&mut self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            if self.child.try_wait()?.is_some() {
                *self.alive.lock().expect("alive") = false;
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the server did not exit within {limit:?}; killed");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let mut alive = self.alive.lock().expect("alive");
        if *alive {
            let _ = self.child.kill();
            let _ = self.child.wait();
            *alive = false;
        }
    }
}

/// Sends `signal` to `pid` unless it has already been reaped (so a reused pid is never hit).
fn signal(alive: &Mutex<bool>, pid: u32, signal: rustix::process::Signal) {
    let alive = alive.lock().expect("alive");
    if *alive && let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

struct ProgressState {
    count: AtomicU64,
    fired: AtomicBool,
    done: (Mutex<bool>, Condvar),
}

/// The watchdog's view of a server: each answer advances it.
pub struct Progress(Arc<ProgressState>);

impl Progress {
    /// Records that the server answered.
    pub fn advance(&self) {
        self.0.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the watchdog killed the server.
    pub fn fired(&self) -> bool {
        self.0.fired.load(Ordering::Relaxed)
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        let (done, wake) = &self.0.done;
        *done.lock().expect("watchdog") = true;
        wake.notify_all();
    }
}

/// A child's stderr, read on a thread of its own so the child never blocks on it.
#[derive(Clone, Default)]
pub struct StderrLog {
    lines: Arc<(Mutex<Vec<String>>, Condvar)>,
}

impl StderrLog {
    fn capture(stderr: ChildStderr) -> StderrLog {
        let log = StderrLog::default();
        let lines = Arc::clone(&log.lines);
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let (kept, grew) = &*lines;
                kept.lock().expect("stderr").push(line);
                grew.notify_all();
            }
        });
        log
    }

    /// Lines that contain `needle`, ignoring case.
    pub fn count_containing(&self, needle: &str) -> usize {
        let needle = needle.to_lowercase();
        self.lines.0.lock().expect("stderr").iter().filter(|line| line.to_lowercase().contains(&needle)).count()
    }

    /// The last lines, for an error message.
    pub fn tail(&self) -> String {
        let lines = self.lines.0.lock().expect("stderr");
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Waits up to `limit` for the first line `pick` accepts; what it returned.
    pub fn wait_for<T>(&self, limit: Duration, pick: impl Fn(&str) -> Option<T>) -> Result<T> {
        let deadline = Instant::now() + limit;
        let (kept, grew) = &*self.lines;
        let mut lines = kept.lock().expect("stderr");
        loop {
            if let Some(found) = lines.iter().find_map(|line| pick(line)) {
                return Ok(found);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("not seen on the server's stderr within {limit:?}; its stderr ends:\n{}", lines[lines.len().saturating_sub(20)..].join("\n"));
            }
            lines = grew.wait_timeout(lines, left).expect("stderr").0;
        }
    }
}
