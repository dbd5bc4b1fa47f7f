//! `resume`, `mixed` and `soak`: workers drawing operations from a blend.
//!
//! - `resume`: every operation drops an SSE answer after its first event
//!   and resumes it with `Last-Event-ID`.
//! - `mixed`: 60 % echo, 15 % progress (SSE), 10 % resume, 8 % cancel,
//!   7 % session churn (new session, echo, DELETE).
//! - `soak`: `mixed` for the whole `--duration`, the servers' RSS and open
//!   fds sampled every `--sample-every` seconds (stderr); when the load
//!   stops, every session is deleted and every connection closed, and after
//!   `--settle` seconds both are read again and compared with the baseline
//!   taken before the first request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::ops::{self, Seen};
use super::{bounded, Errors, Window};
use crate::cli::{Args, Scenario};
use crate::client::{Client, Session};
use crate::report::Report;
use crate::stats::{self, Latency};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Echo,
    Progress,
    Resume,
    Cancel,
    Churn,
}

pub const OPS: [Op; 5] = [Op::Echo, Op::Progress, Op::Resume, Op::Cancel, Op::Churn];

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Echo => "echo",
            Op::Progress => "progress",
            Op::Resume => "resume",
            Op::Cancel => "cancel",
            Op::Churn => "churn",
        }
    }
}

/// The blend, in percent (sums to 100).
pub const MIX: [(Op, u64); 5] = [
    (Op::Echo, 60),
    (Op::Progress, 15),
    (Op::Resume, 10),
    (Op::Cancel, 8),
    (Op::Churn, 7),
];

/// The operation for a roll in 0..100.
pub fn pick(roll: u64) -> Op {
    let mut acc = 0;
    for (op, pct) in MIX {
        acc += pct;
        if roll < acc {
            return op;
        }
    }
    Op::Echo
}

/// xorshift64*: a small, seedable, good-enough source of rolls.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn roll(&mut self) -> u64 {
        self.next() % 100
    }
}

#[derive(Default)]
struct PerOp {
    latencies: Vec<u64>,
    errors: u64,
    replayed: u64,
}

async fn run_op(op: Op, a: (&Client, &Session, u64, u64, u64)) -> anyhow::Result<Seen> {
    let (client, s, id, steps, interval) = a;
    match op {
        Op::Echo => ops::echo(s, id).await,
        Op::Progress => ops::progress(s, id, steps, interval).await,
        Op::Resume => ops::resume(s, id, steps, interval).await,
        Op::Cancel => ops::cancel(s, id).await,
        Op::Churn => ops::churn(client, id).await,
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    t: f64,
    rss_kib: Option<u64>,
    fds: Option<u64>,
}

fn sample(pids: &[u32], since: Instant) -> Sample {
    Sample {
        t: since.elapsed().as_secs_f64(),
        rss_kib: stats::total(pids, stats::rss_kib),
        fds: stats::total(pids, stats::open_fds),
    }
}

/// Whether memory came back: within 1 MiB + 10 % of the peak's growth.
pub fn rss_returned(base: u64, peak: u64, after: u64) -> bool {
    after <= base + 1024 + peak.saturating_sub(base) / 10
}

pub async fn run(a: &Args) -> anyhow::Result<Report> {
    let soak = a.scenario == Scenario::Soak;
    let only_resume = a.scenario == Scenario::Resume;
    let t0 = Instant::now();
    let baseline = sample(&a.pid, t0);
    let client = Client::new(&a.url, a.header_map(), &a.protocol_version, 4096)?;
    let mut sessions = Vec::new();
    for _ in 0..a.sessions {
        sessions.push(Arc::new(client.open_session().await?));
    }
    let errors = Arc::new(Errors::default());
    let next_id = Arc::new(AtomicU64::new(1));
    let window = Window::start(a);
    let samples = Arc::new(Mutex::new(vec![baseline]));
    let sampler = soak.then(|| {
        let (samples, pids, every, end) = (
            samples.clone(),
            a.pid.clone(),
            Duration::from_secs(a.sample_every),
            window.end,
        );
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            while Instant::now() < end {
                tick.tick().await;
                let s = sample(&pids, t0);
                eprintln!(
                    "soak t={:>5.0}s rss={} KiB fds={}",
                    s.t,
                    s.rss_kib.unwrap_or(0),
                    s.fds.unwrap_or(0)
                );
                samples.lock().unwrap().push(s);
            }
        })
    });
    let mut workers = Vec::new();
    let (steps, interval) = (a.steps, a.interval_ms);
    for (si, s) in sessions.iter().enumerate() {
        for wi in 0..a.concurrency {
            let (s, client, errors, next_id, w) = (
                s.clone(),
                client.clone(),
                errors.clone(),
                next_id.clone(),
                window.clone(),
            );
            let mut rng = Rng::new((si * 1000 + wi + 1) as u64);
            workers.push(tokio::spawn(async move {
                let mut per: Vec<PerOp> = OPS.iter().map(|_| PerOp::default()).collect();
                loop {
                    let now = Instant::now();
                    if now >= w.end {
                        return per;
                    }
                    let op = if only_resume {
                        Op::Resume
                    } else {
                        pick(rng.roll())
                    };
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    let r = bounded(run_op(op, (&client, &s, id, steps, interval))).await;
                    if now < w.measure_from {
                        continue;
                    }
                    let p = &mut per[op as usize];
                    match r {
                        Ok(seen) => {
                            p.latencies.push(now.elapsed().as_micros() as u64);
                            p.replayed += seen.replayed;
                        }
                        Err(e) => {
                            p.errors += 1;
                            errors.note(op.name(), &e);
                        }
                    }
                }
            }));
        }
    }
    let mut per: Vec<PerOp> = OPS.iter().map(|_| PerOp::default()).collect();
    for w in workers {
        for (total, p) in per.iter_mut().zip(w.await?) {
            total.latencies.extend(p.latencies);
            total.errors += p.errors;
            total.replayed += p.replayed;
        }
    }
    if let Some(s) = sampler {
        s.abort();
    }
    let at_end = sample(&a.pid, t0);

    let mut report = Report::new(
        a,
        format!(
            "{} sessions x {} workers, {} s{}",
            a.sessions,
            a.concurrency,
            a.duration,
            if only_resume {
                format!(", countdown {steps} steps x {interval} ms, drop + Last-Event-ID")
            } else {
                format!(", blend {}", mix_line())
            }
        ),
    );
    let all: Vec<u64> = per
        .iter()
        .flat_map(|p| p.latencies.iter().copied())
        .collect();
    let errors_total: u64 = per.iter().map(|p| p.errors).sum();
    let overall = Latency::of(all);
    report.rate(
        "ops",
        overall.count as u64,
        errors_total,
        &window,
        &overall,
        &a.pid,
    );
    let mut by_op = serde_json::Map::new();
    for (op, p) in OPS.iter().zip(&per) {
        if p.latencies.is_empty() && p.errors == 0 {
            continue;
        }
        let l = Latency::of(p.latencies.clone());
        report.line(
            op.name(),
            format!(
                "{} ok, {} errors, p50 {:.2} ms, p99 {:.2} ms{}",
                l.count,
                p.errors,
                l.p50,
                l.p99,
                if *op == Op::Resume {
                    format!(", {} events after resuming", p.replayed)
                } else {
                    String::new()
                }
            ),
        );
        by_op.insert(
            op.name().into(),
            serde_json::json!({"ok": l.count, "errors": p.errors, "p50_ms": l.p50, "p99_ms": l.p99,
                "p999_ms": l.p999, "max_ms": l.max, "replayed": p.replayed}),
        );
    }
    report.put("ops_by_kind", by_op);
    report.put("sessions", a.sessions);
    report.put("concurrency", a.concurrency);
    report.put("duration_s", a.duration);
    report.put("steps", steps);
    report.put("interval_ms", interval);

    if soak {
        // Stop: delete every session, close every connection, settle.
        for s in &sessions {
            if let Err(e) = bounded(s.delete()).await {
                errors.note("DELETE", &e);
                report.errors += 1;
            }
        }
        drop(sessions);
        drop(client);
        tokio::time::sleep(Duration::from_secs(a.settle)).await;
        let after = sample(&a.pid, t0);
        let samples = samples.lock().unwrap().clone();
        let peak_rss = samples
            .iter()
            .chain([&at_end])
            .filter_map(|s| s.rss_kib)
            .max();
        let peak_fds = samples.iter().chain([&at_end]).filter_map(|s| s.fds).max();
        let mid = samples
            .iter()
            .find(|s| s.t >= window.seconds() / 2.0 + a.warmup as f64)
            .copied();
        let rss_back = match (baseline.rss_kib, peak_rss, after.rss_kib) {
            (Some(b), Some(p), Some(x)) => Some(rss_returned(b, p, x)),
            _ => None,
        };
        let fds_back = match (baseline.fds, after.fds) {
            (Some(b), Some(x)) => Some(x <= b),
            _ => None,
        };
        let show = |x: Option<u64>| x.map_or("n/a".into(), |v| v.to_string());
        report.line(
            "RSS KiB",
            format!(
                "baseline {}, half-way {}, end of load {}, peak {}, {} s after {} -> {}",
                show(baseline.rss_kib),
                show(mid.and_then(|m| m.rss_kib)),
                show(at_end.rss_kib),
                show(peak_rss),
                a.settle,
                show(after.rss_kib),
                match rss_back {
                    Some(true) => "back to baseline",
                    Some(false) => "NOT back to baseline",
                    None => "n/a",
                }
            ),
        );
        report.line(
            "open fds",
            format!(
                "baseline {}, end of load {}, peak {}, {} s after {} -> {}",
                show(baseline.fds),
                show(at_end.fds),
                show(peak_fds),
                a.settle,
                show(after.fds),
                match fds_back {
                    Some(true) => "back to baseline",
                    Some(false) => "NOT back to baseline",
                    None => "n/a",
                }
            ),
        );
        report.put("rss_base_kib", baseline.rss_kib);
        report.put("rss_mid_kib", mid.and_then(|m| m.rss_kib));
        report.put("rss_end_kib", at_end.rss_kib);
        report.put("rss_peak_kib", peak_rss);
        report.put("rss_after_kib", after.rss_kib);
        report.put("rss_returned", rss_back);
        report.put("fds_base", baseline.fds);
        report.put("fds_end", at_end.fds);
        report.put("fds_peak", peak_fds);
        report.put("fds_after", after.fds);
        report.put("fds_returned", fds_back);
        report.put("settle_s", a.settle);
        report.put(
            "samples",
            samples
                .iter()
                .map(|s| serde_json::json!([stats::round3(s.t), s.rss_kib, s.fds]))
                .collect::<Vec<_>>(),
        );
    }
    Ok(report)
}

fn mix_line() -> String {
    MIX.iter()
        .map(|(op, pct)| format!("{pct}% {}", op.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blend_sums_to_100_and_every_roll_has_an_op() {
        assert_eq!(MIX.iter().map(|(_, p)| p).sum::<u64>(), 100);
        assert_eq!(pick(0), Op::Echo);
        assert_eq!(pick(59), Op::Echo);
        assert_eq!(pick(60), Op::Progress);
        assert_eq!(pick(75), Op::Resume);
        assert_eq!(pick(85), Op::Cancel);
        assert_eq!(pick(93), Op::Churn);
        assert_eq!(pick(99), Op::Churn);
    }

    #[test]
    fn rolls_follow_the_blend() {
        let mut rng = Rng::new(1);
        let mut counts = [0u64; 5];
        for _ in 0..100_000 {
            counts[pick(rng.roll()) as usize] += 1;
        }
        for (op, pct) in MIX {
            let got = counts[op as usize] as f64 / 1000.0;
            assert!((got - pct as f64).abs() < 1.0, "{}: {got}%", op.name());
        }
    }

    #[test]
    fn memory_return_tolerance() {
        assert!(rss_returned(10_000, 50_000, 10_500));
        assert!(rss_returned(10_000, 50_000, 15_000));
        assert!(!rss_returned(10_000, 50_000, 16_000));
        assert!(rss_returned(10_000, 10_000, 9_000));
    }
}
