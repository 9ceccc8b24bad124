//! Figures read off samples and off `/proc`: percentiles and medians, a process's CPU time
//! (`/proc/PID/task/*/schedstat`), its resident memory (`VmHWM`, `VmRSS`), and the machine's
//! 1-minute load.

/// The value at fraction `p` (0 to 1) of `sorted`, nearest rank; 0 when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// The median of `values` (sorts them).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    percentile(values, 0.5)
}

/// The median over rounds of one figure.
pub fn median_of<T>(rounds: &[T], figure: impl Fn(&T) -> f64) -> f64 {
    median(&mut rounds.iter().map(figure).collect::<Vec<_>>())
}

/// The 50th and 99th percentiles of `samples` (sorts them).
pub fn p50_p99(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    (percentile(samples, 0.5), percentile(samples, 0.99))
}

/// Nanoseconds every thread of `pid` has spent on a CPU.
pub fn cpu_ns(pid: u32) -> anyhow::Result<u64> {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let stat = std::fs::read_to_string(task?.path().join("schedstat")).unwrap_or_default();
        total += stat.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
    }
    Ok(total)
}

/// The CPU time the calling thread has used (`/proc/thread-self/schedstat`), in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok().and_then(|s| s.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

/// Minor page faults `pid` has taken so far (`/proc/PID/stat`, the tenth field).
pub fn minor_faults(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces: fields are counted from the `)` that ends it.
    let after_name = stat.rfind(')').map_or("", |end| &stat[end + 1..]);
    let field = after_name.split_whitespace().nth(7).ok_or_else(|| anyhow::anyhow!("/proc/{pid}/stat has no fault count"))?;
    Ok(field.parse()?)
}

/// A `kB` field of `/proc/PID/status` (`VmHWM`, `VmRSS`, `RssAnon`), in MB.
fn status_mb(pid: u32, field: &str) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.split_whitespace().next())
        .and_then(|value| value.parse::<f64>().ok());
    Ok(kb.unwrap_or(0.0) / 1024.0)
}

/// The peak resident set of `pid`, in MB.
pub fn peak_rss_mb(pid: u32) -> anyhow::Result<f64> {
    status_mb(pid, "VmHWM")
}

/// The current resident set of `pid`, in MB.
pub fn rss_mb(pid: u32) -> anyhow::Result<f64> {
    status_mb(pid, "VmRSS")
}

/// The anonymous part of the current resident set of `pid` (`RssAnon`), in MB: memory of the
/// process's own, as opposed to file pages (the binary, mapped compiled code) that it shares
/// with the page cache.
pub fn anon_rss_mb(pid: u32) -> anyhow::Result<f64> {
    status_mb(pid, "RssAnon")
}

/// The machine's 1-minute load average, as `/proc/loadavg` gives it.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").ok().and_then(|line| line.split_whitespace().next().map(str::to_owned)).unwrap_or_else(|| "?".into())
}

/// Microseconds in `duration`.
pub fn micros(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// Milliseconds in `duration`.
pub fn millis(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let mut samples: Vec<f64> = (1..=100).map(f64::from).collect();
        samples.reverse();
        assert_eq!(p50_p99(&mut samples), (51.0, 99.0));
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
