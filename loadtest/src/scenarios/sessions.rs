//! `sessions`: workers looping initialize + notifications/initialized +
//! DELETE; the rate of whole session lifecycles.

use std::sync::Arc;
use std::time::Instant;

use super::{bounded, Errors, Window};
use crate::cli::Args;
use crate::client::Client;
use crate::report::Report;
use crate::stats::Latency;

pub async fn run(a: &Args) -> anyhow::Result<Report> {
    let client = Client::new(&a.url, a.header_map(), &a.protocol_version, 4096)?;
    let errors = Arc::new(Errors::default());
    let workers_n = a.sessions * a.concurrency;
    let window = Window::start(a);
    let mut workers = Vec::new();
    for _ in 0..workers_n {
        let (client, errors, w) = (client.clone(), errors.clone(), window.clone());
        workers.push(tokio::spawn(async move {
            let (mut cycles, mut setups, mut deletes) = (Vec::new(), Vec::new(), Vec::new());
            loop {
                let t0 = Instant::now();
                if t0 >= w.end {
                    return (cycles, setups, deletes);
                }
                let r = bounded(async {
                    let s = client.open_session().await?;
                    let t1 = Instant::now();
                    s.delete().await?;
                    Ok(t1)
                })
                .await;
                if t0 < w.measure_from {
                    continue;
                }
                match r {
                    Ok(t1) => {
                        cycles.push(t0.elapsed().as_micros() as u64);
                        setups.push((t1 - t0).as_micros() as u64);
                        deletes.push(t1.elapsed().as_micros() as u64);
                    }
                    Err(e) => errors.note("session", &e),
                }
            }
        }));
    }
    let (mut cycles, mut setups, mut deletes) = (Vec::new(), Vec::new(), Vec::new());
    for w in workers {
        let (c, s, d) = w.await?;
        cycles.extend(c);
        setups.extend(s);
        deletes.extend(d);
    }
    let (cycle, setup, delete) = (
        Latency::of(cycles),
        Latency::of(setups),
        Latency::of(deletes),
    );
    let mut report = Report::new(
        a,
        format!(
            "{workers_n} workers, {} s, initialize + initialized + DELETE",
            a.duration
        ),
    );
    report.rate(
        "sessions",
        cycle.count as u64,
        errors.count(),
        &window,
        &cycle,
        &a.pid,
    );
    report.line("set-up", setup.line());
    report.line("delete", delete.line());
    report.put("workers", workers_n);
    report.put("duration_s", a.duration);
    report.put("setup_p50_ms", setup.p50);
    report.put("setup_p99_ms", setup.p99);
    report.put("delete_p50_ms", delete.p50);
    report.put("delete_p99_ms", delete.p99);
    Ok(report)
}
