//! `idle`: open N sessions, then one GET stream on each, and read how much
//! the server's resident memory (and fd count) grew per session and per
//! stream, each after a settle period. The load generator raises its own
//! open-file limit first, since every held stream is a connection.

use std::time::{Duration, Instant};

use futures_util::{stream, StreamExt};

use super::{bounded, Errors, OP_TIMEOUT};
use crate::cli::Args;
use crate::client::{Client, Session};
use crate::report::Report;
use crate::stats;

struct Reading {
    rss_kib: Option<u64>,
    fds: Option<u64>,
}

async fn settle_and_read(a: &Args) -> Reading {
    tokio::time::sleep(Duration::from_secs(a.settle)).await;
    Reading {
        rss_kib: stats::total(&a.pid, stats::rss_kib),
        fds: stats::total(&a.pid, stats::open_fds),
    }
}

/// `f`, unless `deadline` passes first (or has passed: then not started).
async fn before<T>(
    deadline: Instant,
    f: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        anyhow::bail!("skipped: the set-up time (--setup-timeout) ran out");
    }
    tokio::time::timeout(left.min(OP_TIMEOUT), f)
        .await
        .unwrap_or_else(|_| Err(anyhow::anyhow!("no answer in time")))
}

/// (b - a) / n, in KiB, when both readings exist.
fn per(a: Option<u64>, b: Option<u64>, n: usize) -> Option<f64> {
    Some((b? as f64 - a? as f64) / n.max(1) as f64)
}

pub async fn run(a: &Args) -> anyhow::Result<Report> {
    let limit = rlimit::increase_nofile_limit(u64::MAX).unwrap_or(0);
    let client = Client::new(
        &a.url,
        a.header_map(),
        &a.protocol_version,
        a.setup_concurrency,
    )?;
    let errors = Errors::default();
    let base = settle_and_read(a).await;

    let t = Instant::now();
    let deadline = t + Duration::from_secs(a.setup_timeout);
    let results: Vec<_> = stream::iter(0..a.sessions)
        .map(|_| before(deadline, client.open_session()))
        .buffer_unordered(a.setup_concurrency)
        .collect()
        .await;
    let setup_s = t.elapsed().as_secs_f64();
    let mut sessions: Vec<Session> = Vec::new();
    for r in results {
        match r {
            Ok(s) => sessions.push(s),
            Err(e) => errors.note("initialize", &e),
        }
    }
    let with_sessions = settle_and_read(a).await;

    let mut streams = Vec::new();
    let mut with_streams = None;
    if !a.no_streams {
        let results: Vec<_> = stream::iter(&sessions)
            .map(|s| before(deadline, s.get(None)))
            .buffer_unordered(a.setup_concurrency)
            .collect()
            .await;
        for r in results {
            match r {
                Ok(response) => streams.push(response),
                Err(e) => errors.note("GET stream", &e),
            }
        }
        with_streams = Some(settle_and_read(a).await);
    }
    if a.hold > 0 {
        tokio::time::sleep(Duration::from_secs(a.hold)).await;
    }
    let held_streams = streams.len();
    drop(streams);
    let deleted: Vec<_> = stream::iter(&sessions)
        .map(|s| bounded(s.delete()))
        .buffer_unordered(a.setup_concurrency)
        .collect()
        .await;
    let delete_errors = deleted.iter().filter(|r| r.is_err()).count();

    let n = sessions.len();
    let per_session = per(base.rss_kib, with_sessions.rss_kib, n);
    let per_stream = with_streams
        .as_ref()
        .and_then(|w| per(with_sessions.rss_kib, w.rss_kib, held_streams));
    let mut report = Report::new(
        a,
        format!(
            "{} sessions{}, settle {} s",
            a.sessions,
            if a.no_streams {
                ""
            } else {
                " + one GET stream each"
            },
            a.settle
        ),
    );
    report.errors = errors.count();
    report.line(
        "sessions",
        format!(
            "{n} opened in {setup_s:.2} s ({:.0}/s), {} errors, {delete_errors} DELETE errors",
            n as f64 / setup_s.max(0.001),
            errors.count()
        ),
    );
    let kib = |x: Option<u64>| x.map_or("n/a".to_owned(), |k| format!("{k} KiB"));
    let fds = |x: Option<u64>| x.map_or("n/a".to_owned(), |k| k.to_string());
    report.line(
        "baseline",
        format!("RSS {}, {} fds", kib(base.rss_kib), fds(base.fds)),
    );
    report.line(
        "+sessions",
        format!(
            "RSS {}, {} fds: {} per session",
            kib(with_sessions.rss_kib),
            fds(with_sessions.fds),
            per_session.map_or("n/a".to_owned(), |k| format!("{k:.2} KiB"))
        ),
    );
    if let Some(w) = &with_streams {
        report.line(
            "+streams",
            format!(
                "{held_streams} held, RSS {}, {} fds: {} per stream",
                kib(w.rss_kib),
                fds(w.fds),
                per_stream.map_or("n/a".to_owned(), |k| format!("{k:.2} KiB"))
            ),
        );
    }
    report.line("fd limit", format!("load generator's soft limit {limit}"));
    report.put("sessions", n);
    report.put("streams", held_streams);
    report.put("errors", errors.count());
    report.put("delete_errors", delete_errors);
    report.put("setup_per_s", stats::round3(n as f64 / setup_s.max(0.001)));
    report.put("rss_base_kib", base.rss_kib);
    report.put("rss_sessions_kib", with_sessions.rss_kib);
    report.put(
        "rss_streams_kib",
        with_streams.as_ref().and_then(|w| w.rss_kib),
    );
    report.put("fds_base", base.fds);
    report.put("fds_sessions", with_sessions.fds);
    report.put("fds_streams", with_streams.as_ref().and_then(|w| w.fds));
    report.put("kib_per_session", per_session.map(stats::round3));
    report.put("kib_per_stream", per_stream.map(stats::round3));
    Ok(report)
}

#[cfg(test)]
mod tests {
    #[test]
    fn growth_per_item() {
        assert_eq!(super::per(Some(1000), Some(9000), 2000), Some(4.0));
        assert_eq!(super::per(Some(1000), Some(900), 100), Some(-1.0));
        assert_eq!(super::per(None, Some(9000), 2000), None);
        assert_eq!(super::per(Some(0), Some(10), 0), Some(10.0));
    }
}
