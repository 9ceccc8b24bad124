//! What a run was measured on and what else ran beside it: the machine (CPU model, cores,
//! kernel), cores for the server and the client, and the CPU every other process used during
//! each measured run (from `/proc`), so a run that shared the machine is marked as such.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result};
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

/// Other processes may use this much CPU (in CPUs: 0.1 is a tenth of one) during a run before
/// the run is marked contaminated.
pub const CONTAMINATED_ABOVE: f64 = 0.10;
/// A load client busy for this share of its core or more is the limit of what it measured.
pub const CLIENT_BOUND_AT: f64 = 0.90;

/// The machine, in one line: CPU model, the cores this process may use, the kernel.
pub fn describe() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| info.lines().find_map(|line| line.strip_prefix("model name")?.split_once(':').map(|(_, m)| m.trim().to_owned())))
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|k| k.trim().to_owned()).unwrap_or_else(|_| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    format!("{model}, {cores} CPUs, Linux {kernel}")
}

/// The two cores a load runs on: the server's and its client's. With one core only, both are
/// that core, and the report says so.
#[derive(Debug, Clone, Copy)]
pub struct Cores {
    pub server: usize,
    pub client: usize,
}

impl Cores {
    /// The first two cores this process may use.
    pub fn pick() -> Result<Cores> {
        let allowed = sched_getaffinity(None).context("read this thread's cores")?;
        let usable: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&cpu| allowed.is_set(cpu)).take(2).collect();
        let server = *usable.first().context("no usable core")?;
        Ok(Cores { server, client: usable.get(1).copied().unwrap_or(server) })
    }

    /// Whether client and server share a core (a one-core machine).
    pub fn shared(self) -> bool {
        self.server == self.client
    }
}

/// Runs `body` with the calling thread bound to `core`: processes it spawns inherit the binding
/// for all their threads.
pub fn on_core<T>(core: usize, body: impl FnOnce() -> Result<T>) -> Result<T> {
    let allowed = sched_getaffinity(None).context("read this thread's cores")?;
    let mut one = CpuSet::new();
    one.set(core);
    sched_setaffinity(None, &one).context("bind this thread to one core")?;
    let result = body();
    sched_setaffinity(None, &allowed).context("unbind this thread")?;
    result
}

/// Binds every thread of this process to `core` until the guard is dropped (the WebSocket
/// client runs on the harness's own runtime).
pub struct ProcessOnCore {
    before: Vec<(rustix::thread::Pid, CpuSet)>,
}

impl ProcessOnCore {
    pub fn bind(core: usize) -> Result<ProcessOnCore> {
        let mut one = CpuSet::new();
        one.set(core);
        let mut before = Vec::new();
        for tid in own_threads()? {
            if let Ok(allowed) = sched_getaffinity(Some(tid)) {
                sched_setaffinity(Some(tid), &one).context("bind a thread of the harness")?;
                before.push((tid, allowed));
            }
        }
        Ok(ProcessOnCore { before })
    }
}

impl Drop for ProcessOnCore {
    fn drop(&mut self) {
        for (tid, allowed) in &self.before {
            let _ = sched_setaffinity(Some(*tid), allowed);
        }
    }
}

fn own_threads() -> Result<Vec<rustix::thread::Pid>> {
    let mut tids = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task")? {
        let raw: i32 = entry?.file_name().to_string_lossy().parse().context("a thread id")?;
        tids.extend(rustix::thread::Pid::from_raw(raw));
    }
    Ok(tids)
}

/// CPU time (in clock ticks) of one process from `/proc/PID/stat`: user plus system.
fn ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// Clock ticks per second of `/proc/PID/stat` times.
fn ticks_per_second() -> f64 {
    rustix::param::clock_ticks_per_second() as f64
}

/// CPU seconds of a process that has exited but not been reaped (`/proc/PID/stat` of a zombie
/// keeps its totals).
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(ticks(&stat)? as f64 / ticks_per_second())
}

#[derive(Debug, Clone)]
struct Seen {
    name: String,
    kernel_thread: bool,
    ticks: u64,
}

fn snapshot(exclude: &[u32]) -> HashMap<u32, Seen> {
    let mut seen = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return seen };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if exclude.contains(&pid) || pid == std::process::id() {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(ticks) = ticks(&stat) else { continue };
        let name = stat.split_once('(').and_then(|(_, rest)| rest.rsplit_once(')')).map(|(name, _)| name.to_owned()).unwrap_or_default();
        // Kernel threads have no command line.
        let kernel_thread = std::fs::read(format!("/proc/{pid}/cmdline")).map(|c| c.is_empty()).unwrap_or(false);
        seen.insert(pid, Seen { name, kernel_thread, ticks });
    }
    seen
}

/// The CPU every process but the measured ones used during a run.
pub struct Others {
    exclude: Vec<u32>,
    before: HashMap<u32, Seen>,
    started: Instant,
}

/// What [`Others`] found.
#[derive(Debug, Clone, Default)]
pub struct OthersCpu {
    /// User processes, in CPUs (CPU seconds over the run's seconds).
    pub processes: f64,
    /// Kernel threads (soft interrupts, writeback), in CPUs: work the run itself may cause.
    pub kernel_threads: f64,
    /// The busiest other process and its share.
    pub busiest: Option<(String, f64)>,
}

impl OthersCpu {
    /// Whether other processes used enough CPU to disturb the run.
    pub fn contaminated(&self) -> bool {
        self.processes > CONTAMINATED_ABOVE
    }
}

impl Others {
    /// Starts watching every process except `exclude` (the server, the client) and the harness.
    pub fn start(exclude: &[u32]) -> Others {
        Others { exclude: exclude.to_vec(), before: snapshot(exclude), started: Instant::now() }
    }

    /// The CPU the others used since `start`.
    pub fn finish(self) -> OthersCpu {
        let seconds = self.started.elapsed().as_secs_f64().max(1e-3);
        let after = snapshot(&self.exclude);
        let per_second = ticks_per_second();
        let mut figures = OthersCpu::default();
        for (pid, now) in after {
            let used = now.ticks.saturating_sub(self.before.get(&pid).map_or(0, |b| b.ticks));
            if used == 0 {
                continue;
            }
            let share = used as f64 / per_second / seconds;
            if now.kernel_thread {
                figures.kernel_threads += share;
            } else {
                figures.processes += share;
                if figures.busiest.as_ref().is_none_or(|(_, busiest)| share > *busiest) {
                    figures.busiest = Some((now.name, share));
                }
            }
        }
        figures
    }
}

/// One measured run in the contamination record.
#[derive(Debug, Clone)]
pub struct Record {
    pub run: String,
    pub others: OthersCpu,
}

static RECORD: Mutex<Vec<Record>> = Mutex::new(Vec::new());

/// Adds a run to the record printed at the end of the report.
pub fn record(run: String, others: OthersCpu) {
    RECORD.lock().unwrap_or_else(|e| e.into_inner()).push(Record { run, others });
}

/// Every run recorded so far.
pub fn records() -> Vec<Record> {
    RECORD.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_read_after_the_command_name_even_with_spaces_and_parentheses() {
        let stat = "1234 (tokio (rt) w) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 100 0 0";
        assert_eq!(ticks(stat), Some(300));
    }

    #[test]
    fn a_busy_process_beside_the_run_is_seen_and_marks_it_contaminated() {
        let others = Others::start(&[]);
        let mut busy = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().expect("sh");
        let pid = busy.id();
        // Until it has used a fifth of a second of CPU (clock ticks are 10 ms).
        let deadline = Instant::now() + std::time::Duration::from_secs(30);
        while process_cpu_seconds(pid).unwrap_or(0.0) < 0.2 {
            assert!(Instant::now() < deadline, "the busy shell never got a CPU");
            std::thread::yield_now();
        }
        let figures = others.finish();
        busy.kill().ok();
        busy.wait().ok();
        assert!(figures.processes > 0.0, "the busy shell is counted: {figures:?}");
    }
}
