//! `calls`: S sessions × C workers looping `tools/call`; every answer, JSON
//! or SSE, read and checked.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::{bounded, Errors, Window};
use crate::cli::Args;
use crate::client::{Answer, Client};
use crate::report::Report;
use crate::stats::Latency;

pub async fn run(a: &Args) -> anyhow::Result<Report> {
    let args: Value = serde_json::from_str(&a.arguments)?;
    let client = Client::new(&a.url, a.header_map(), &a.protocol_version, 4096)?;
    let mut sessions = Vec::new();
    for _ in 0..a.sessions {
        sessions.push(Arc::new(client.open_session().await?));
    }
    let errors = Arc::new(Errors::default());
    let sse = Arc::new(AtomicU64::new(0));
    let next_id = Arc::new(AtomicU64::new(1));
    let window = Window::start(a);
    let mut workers = Vec::new();
    for s in &sessions {
        for _ in 0..a.concurrency {
            let (s, errors, sse, next_id, args, tool, progress, w) = (
                s.clone(),
                errors.clone(),
                sse.clone(),
                next_id.clone(),
                args.clone(),
                a.tool.clone(),
                a.progress,
                window.clone(),
            );
            workers.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let now = Instant::now();
                    if now >= w.end {
                        return latencies;
                    }
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    let r = bounded(s.call(id, &tool, &args, progress)).await;
                    let took = now.elapsed();
                    if now < w.measure_from {
                        continue;
                    }
                    match r {
                        Ok(answer) => {
                            if answer == Answer::Sse {
                                sse.fetch_add(1, Ordering::Relaxed);
                            }
                            latencies.push(took.as_micros() as u64);
                        }
                        Err(e) => errors.note("call", &e),
                    }
                }
            }));
        }
    }
    let mut lat = Vec::new();
    for w in workers {
        lat.extend(w.await?);
    }
    let latency = Latency::of(lat);
    let mut report = Report::new(
        a,
        format!(
            "{} sessions x {} workers, {} s, tool {}{}",
            a.sessions,
            a.concurrency,
            a.duration,
            a.tool,
            if a.progress { ", progress" } else { "" }
        ),
    );
    let sse = sse.load(Ordering::Relaxed);
    report.rate(
        "calls",
        latency.count as u64,
        errors.count(),
        &window,
        &latency,
        &a.pid,
    );
    report.line(
        "answers",
        format!("{sse} as SSE, {} as JSON", latency.count as u64 - sse),
    );
    report.put("sessions", a.sessions);
    report.put("concurrency", a.concurrency);
    report.put("duration_s", a.duration);
    report.put("tool", &a.tool);
    report.put("progress", a.progress);
    report.put("sse", sse);
    Ok(report)
}
