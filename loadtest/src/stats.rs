//! Latency percentiles and what `/proc` says about the server: CPU seconds
//! (`/proc/PID/stat`), resident memory (`/proc/PID/status` VmRSS) and open
//! file descriptors (`/proc/PID/fd`), summed over several pids (replicas).

use serde_json::{json, Value};

/// Nearest-rank percentile of `sorted` (microseconds), in milliseconds:
/// the smallest sample with at least `p` of the samples at or below it.
/// 0 for no samples.
pub fn percentile_ms(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    // (The epsilon keeps 0.99 × 100 at rank 99 despite binary fractions.)
    let rank = (p.clamp(0.0, 1.0) * sorted.len() as f64 - 1e-9).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
}

/// p50, p99, p99.9 and max of a set of latencies (microseconds).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Latency {
    pub count: usize,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Latency {
    pub fn of(mut samples: Vec<u64>) -> Self {
        samples.sort_unstable();
        Self {
            count: samples.len(),
            p50: percentile_ms(&samples, 0.50),
            p99: percentile_ms(&samples, 0.99),
            p999: percentile_ms(&samples, 0.999),
            max: samples.last().copied().unwrap_or(0) as f64 / 1000.0,
        }
    }

    pub fn line(&self) -> String {
        format!(
            "p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
            self.p50, self.p99, self.p999, self.max
        )
    }

    /// `{prefix}p50_ms`, … into a JSON object.
    pub fn put(&self, out: &mut serde_json::Map<String, Value>, prefix: &str) {
        out.insert(format!("{prefix}p50_ms"), json!(round3(self.p50)));
        out.insert(format!("{prefix}p99_ms"), json!(round3(self.p99)));
        out.insert(format!("{prefix}p999_ms"), json!(round3(self.p999)));
        out.insert(format!("{prefix}max_ms"), json!(round3(self.max)));
    }
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// utime + stime of a process, in seconds, from the text of /proc/PID/stat.
pub fn parse_stat_cpu_seconds(stat: &str) -> Option<f64> {
    // The command name (field 2) may hold spaces and parentheses: fields
    // are counted after its last ')'. utime and stime are fields 14 and 15.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

/// VmRSS in KiB from the text of /proc/PID/status.
pub fn parse_status_rss_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

pub fn cpu_seconds(pid: u32) -> Option<f64> {
    parse_stat_cpu_seconds(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

pub fn rss_kib(pid: u32) -> Option<u64> {
    parse_status_rss_kib(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

pub fn open_fds(pid: u32) -> Option<u64> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64)
}

/// `f` summed over `pids`; `None` when there are none or one cannot be read.
pub fn total<T: std::iter::Sum<T>>(pids: &[u32], f: impl Fn(u32) -> Option<T>) -> Option<T> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|p| f(*p)).sum()
}

/// Work per server CPU-second (`None` without a pid or without CPU used).
pub fn per_cpu(count: u64, cpu: Option<f64>) -> Option<f64> {
    cpu.filter(|c| *c > 0.0).map(|c| count as f64 / c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).map(|x| x * 1000).collect();
        assert_eq!(percentile_ms(&v, 0.5), 50.0);
        assert_eq!(percentile_ms(&v, 0.99), 99.0);
        assert_eq!(percentile_ms(&v, 0.999), 100.0);
        assert_eq!(percentile_ms(&v, 1.0), 100.0);
        assert_eq!(percentile_ms(&v, 0.0), 1.0);
        assert_eq!(percentile_ms(&[], 0.5), 0.0);
        assert_eq!(percentile_ms(&[7000], 0.999), 7.0);
    }

    #[test]
    fn p999_needs_a_thousand_samples_to_differ_from_max() {
        let v: Vec<u64> = (1..=2000).collect();
        assert_eq!(percentile_ms(&v, 0.999), 1.998);
        assert_eq!(percentile_ms(&v, 0.99), 1.98);
    }

    #[test]
    fn latency_summary_sorts_its_samples() {
        let l = Latency::of(vec![5000, 1000, 3000, 2000, 4000]);
        assert_eq!(l.count, 5);
        assert_eq!(l.p50, 3.0);
        assert_eq!(l.p99, 5.0);
        assert_eq!(l.max, 5.0);
        assert_eq!(Latency::of(vec![]), Latency::default());
    }

    #[test]
    fn stat_with_spaces_and_parentheses_in_the_name() {
        let stat = "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 100 1000 200";
        assert_eq!(parse_stat_cpu_seconds(stat), Some(3.0));
        assert_eq!(parse_stat_cpu_seconds("garbage"), None);
    }

    #[test]
    fn rss_from_status() {
        let status = "Name:\tmcpd\nVmPeak:\t  9000 kB\nVmRSS:\t   12345 kB\nThreads:\t3\n";
        assert_eq!(parse_status_rss_kib(status), Some(12345));
        assert_eq!(parse_status_rss_kib("Name: x\n"), None);
    }

    #[test]
    fn totals_over_pids() {
        assert_eq!(total::<u64>(&[], |_| Some(1)), None);
        assert_eq!(total(&[1, 2], |p| Some(p as u64 * 10)), Some(30));
        assert_eq!(total(&[1, 2], |p| (p == 1).then_some(1u64)), None);
        assert_eq!(per_cpu(100, Some(2.0)), Some(50.0));
        assert_eq!(per_cpu(100, Some(0.0)), None);
        assert_eq!(per_cpu(100, None), None);
    }

    #[test]
    fn this_process_can_be_read() {
        let me = std::process::id();
        assert!(cpu_seconds(me).is_some());
        assert!(rss_kib(me).unwrap() > 0);
        assert!(open_fds(me).unwrap() >= 3);
    }
}
