//! A client that stops reading an SSE stream while a tool floods it: the
//! server's memory stays bounded (its per-connection buffer holds
//! `limits.stream_buffer` messages; past that the slow client is dropped),
//! the stalled connection is closed (`http.stall_timeout_secs`), and the
//! client resumes with `Last-Event-ID`, getting every event exactly once.
//!
//! The server is a separate process, so its resident memory (VmRSS) is
//! measured alone: this test binary started again, running only
//! [`flood_server`] (mcpd with a `flood` tool), on Redis, so that the event
//! log lives outside the measured process.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mcpd_core::handler::tool_fn;
use mcpd_protocol::types::CallToolResult;
use mcpd_testkit::{McpClient, RedisServer, SseEvent, SseStream};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::*;

const CHILD_ENV: &str = "MCPD_FLOOD_CHILD";
/// Events the flood sends, and the size of each.
const EVENTS: u64 = 2000;
const EVENT_BYTES: usize = 32 * 1024;

#[derive(Deserialize, JsonSchema)]
struct FloodArgs {
    /// Progress notifications to send.
    count: u64,
    /// Length of each one's message.
    bytes: usize,
}

/// Not a test by itself (ignored; returns at once without its environment
/// variable): the server process of
/// [`a_stalled_reader_is_cut_off_with_bounded_memory_and_resumes`]. mcpd
/// with the demo tools plus `flood`, on the Redis at `$MCPD_FLOOD_CHILD`,
/// on an ephemeral port; prints its URLs and serves until killed.
#[test]
#[ignore = "the server process of the slow-reader test, started by it"]
fn flood_server() {
    let Ok(redis_url) = std::env::var(CHILD_ENV) else {
        return;
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut c = mcpd::Config::default();
    c.server.listen = addr.to_string();
    c.server.workers = 2;
    c.store.backend = mcpd::StoreBackend::Redis;
    c.store.redis_url = redis_url;
    c.store.events_per_stream = 2 * EVENTS as usize;
    c.limits.stream_buffer = 16;
    c.http.stall_timeout_secs = 3;
    c.admin.listen = Some("127.0.0.1:0".into());
    actix_rt::System::new().block_on(async move {
        let running = mcpd::serve_with(&c, listener, |registry| {
            registry.add_tool(std::sync::Arc::new(tool_fn(
                "flood",
                "Sends `count` progress notifications of `bytes` bytes each, as fast as it can.",
                |a: FloodArgs, ctx| async move {
                    let pad = "x".repeat(a.bytes);
                    for i in 1..=a.count {
                        ctx.progress(i as f64, Some(a.count as f64), Some(pad.clone()))
                            .await?;
                    }
                    Ok(CallToolResult::text("done"))
                },
            )));
        })
        .expect("mcpd starts");
        println!("admin on {}", running.admin_addr().unwrap());
        println!("mcpd listening on http://{addr}/mcp");
        let _ = running.run().await;
    });
}

/// The child process, killed on drop.
struct FloodServer {
    child: Child,
    url: String,
    admin: String,
}

impl Drop for FloodServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_child(redis: &RedisServer) -> FloodServer {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([
            "slow_reader::flood_server",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, redis.url())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the test binary starts again");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut server = FloodServer {
        child,
        url: String::new(),
        admin: String::new(),
    };
    // The harness may print its own text before ours on a line.
    let after = |line: &str, tag: &str| line.split_once(tag).map(|(_, v)| v.trim().to_owned());
    while server.url.is_empty() || server.admin.is_empty() {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the flood server prints its URLs");
        if let Some(u) = after(&line, "mcpd listening on ") {
            server.url = u;
        }
        if let Some(a) = after(&line, "admin on ") {
            server.admin = format!("http://{a}");
        }
    }
    server
}

/// Resident memory of `pid`, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb * 1024
}

async fn open_sse_streams(admin: &str) -> i64 {
    let text = reqwest::get(format!("{admin}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("mcpd_sse_streams_open "))
        .and_then(|v| v.trim().parse().ok())
        .expect("mcpd_sse_streams_open")
}

fn progress_of(e: &SseEvent) -> Option<u64> {
    let m = e.json()?;
    (m["method"] == "notifications/progress")
        .then(|| m["params"]["progress"].as_f64().unwrap() as u64)
}

/// A client stops reading while `flood` sends 2000 events of 32 KiB
/// (64 MiB) on its stream. The server's RSS grows by far less than that
/// meanwhile; the stalled connection is closed within the stall timeout;
/// the client then reads what reached it and resumes with `Last-Event-ID`:
/// every progress event exactly once, in order, then the result.
#[tokio::test]
async fn a_stalled_reader_is_cut_off_with_bounded_memory_and_resumes() {
    let redis = RedisServer::start();
    let server = start_child(&redis);
    let pid = server.child.id();
    let mut c = McpClient::new(&server.url);
    c.initialize().await;
    let probe = {
        let mut p = McpClient::new(&server.url);
        p.initialize().await;
        p
    };
    let flood = |id: i64, count: u64| {
        let c = c.clone();
        async move {
            let params = call_params(
                "flood",
                json!({"count": count, "bytes": EVENT_BYTES}),
                Some(json!(id)),
            );
            let (status, _, st) = c.request_stream(id, "tools/call", params).await;
            assert_eq!(status, 200);
            st
        }
    };
    // Warm up (allocator pools, Redis connection) with a client that reads.
    let mut warm = flood(1, 200).await;
    let (_, resp) = read_until_response(&mut warm, &json!(1)).await;
    assert_eq!(tool_text(&resp["result"]), "done");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let baseline = rss(pid);

    // The stalled client: reads the priming event, then nothing.
    let mut stalled = flood(2, EVENTS).await;
    let priming = next_event(&mut stalled).await;
    assert!(
        priming.id.is_some() && priming.data.is_empty(),
        "{priming:?}"
    );
    let mut peak = baseline;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        peak = peak.max(rss(pid));
        // `server_stats` itself is the one request in flight once flood ends.
        if stats(&probe).await["in_flight_requests"] == 1 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "flood did not finish"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    peak = peak.max(rss(pid));
    let flooded = EVENTS * EVENT_BYTES as u64;
    // Buffering it all would add most of the 64 MiB (what the kernel's
    // socket buffers hold is not counted); bounded buffers add next to
    // nothing.
    let grown = peak.saturating_sub(baseline);
    eprintln!(
        "slow reader: server RSS {} MiB before, peak {} MiB while 64 MiB flooded",
        baseline >> 20,
        peak >> 20
    );
    assert!(
        grown < flooded / 4,
        "server RSS grew by {} MiB while 64 MiB flooded a stalled stream",
        grown >> 20
    );

    // The server closes the stalled connection (stall timeout: 3 s).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while open_sse_streams(&server.admin).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stalled stream is still open"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The client reads what reached it, then the stream ends: cut off
    // before the result.
    let mut got = vec![priming];
    got.extend(stalled.collect_all(WAIT).await);
    assert!(
        got.iter()
            .filter_map(SseEvent::json)
            .all(|m| m.get("result").is_none()),
        "the stalled stream carried the result"
    );
    let last = got
        .iter()
        .rev()
        .find_map(|e| e.id.clone())
        .expect("an id to resume from");
    let resumed = c.get(Some(&last)).await;
    assert_eq!(resumed.status(), 200);
    let mut resumed = SseStream::new(resumed);
    let (rest, resp) = read_until_response(&mut resumed, &json!(2)).await;
    assert_eq!(tool_text(&resp["result"]), "done", "{resp}");
    let progress: Vec<u64> = got
        .iter()
        .filter_map(progress_of)
        .chain(
            rest.iter()
                .filter(|m| m["method"] == "notifications/progress")
                .map(|m| m["params"]["progress"].as_f64().unwrap() as u64),
        )
        .collect();
    assert_eq!(
        progress,
        (1..=EVENTS).collect::<Vec<_>>(),
        "every progress event once, in order, across the cut"
    );
}
