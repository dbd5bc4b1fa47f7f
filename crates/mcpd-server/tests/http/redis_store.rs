//! The Redis store beyond what both backends share (those tests are in
//! [`get_resume`](crate::get_resume)): mcpd killed (SIGKILL) and started
//! again on the same Redis, Redis itself killed and restarted under a running
//! mcpd, and a real three-node Redis Cluster.

use std::process::Command;
use std::time::{Duration, Instant};

use mcpd::Config;
use mcpd_testkit::{
    McpClient, McpdProcess, RedisCluster, RedisServer, SseEvent, SseStream, INIT_VERSION,
};
use serde_json::{json, Value};

use crate::backend::use_redis;
use crate::server::TestServer;
use crate::*;

/// The error a resumed stream carries for a request its (killed) server
/// never answered.
const LOST: &str = "The server process running this request stopped before it finished; its result is lost. Retry the request.";

/// Bound on a resumption that must find a killed process dead: its liveness
/// key expires first (seconds), then the lost requests get their error.
const DEAD_OWNER_WAIT: Duration = Duration::from_secs(30);

/// mcpd as a child process on `redis_url`, with `extra` flags. Events are
/// held 1 s while Redis is away (`limits.event_log_hold_ms`, 5 s by
/// default), then sent without ids.
fn mcpd_on(redis_url: &str, extra: &[&str]) -> McpdProcess {
    let mut args = vec!["--store", "redis", "--redis-url", redis_url];
    args.extend_from_slice(extra);
    McpdProcess::start_with(
        env!("CARGO_BIN_EXE_mcpd"),
        &args,
        &[("MCPD_LIMITS_EVENT_LOG_HOLD_MS", "1000")],
        None,
    )
}

/// A client of the same session with a new connection pool (the old one
/// may hold connections to the killed process).
fn fresh(c: &McpClient) -> McpClient {
    let mut n = McpClient::new(&c.url);
    n.session = c.session.clone();
    n.version = c.version.clone();
    n
}

/// `redis-cli ARGS`, its stdout (panics if it fails).
fn redis_cli(args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(args)
        .output()
        .expect("redis-cli runs (apt-get install -y redis-tools)");
    assert!(
        out.status.success(),
        "redis-cli {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `redis-cli` on the unix socket of `r`.
fn redis_cli_on(r: &RedisServer, args: &[&str]) -> String {
    let sock = r.socket().display().to_string();
    let mut all = vec!["-s", sock.as_str(), "--raw"];
    all.extend_from_slice(args);
    redis_cli(&all)
}

/// Keys of session `sid` in `r`.
fn session_keys(r: &RedisServer, sid: &str) -> Vec<String> {
    redis_cli_on(r, &["KEYS", "*"])
        .lines()
        .filter(|k| k.contains(sid))
        .map(str::to_owned)
        .collect()
}

/// Waits until the session record of `sid` contains `want`. Session state
/// changes are saved in the background after the answer, so a test that
/// kills mcpd right after one waits for the save first.
async fn wait_record(r: &RedisServer, sid: &str, want: &str) {
    let key = format!("mcpd:{{{sid}}}:s");
    let deadline = Instant::now() + WAIT;
    loop {
        let record = redis_cli_on(r, &["GET", &key]);
        if record.contains(want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "session record never contained {want}: {record}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `fut`, or a panic naming `what` if it takes longer than [`WAIT`].
async fn bounded<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    let start = Instant::now();
    match tokio::time::timeout(WAIT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what} hung: no answer within {WAIT:?} (since {start:?})"),
    }
}

/// Sequence number of an event id (`<stream>-<seq>`).
fn seq_of(e: &SseEvent) -> u64 {
    let id =
        e.id.as_deref()
            .unwrap_or_else(|| panic!("event without id: {e:?}"));
    id.rsplit_once('-')
        .and_then(|(_, s)| s.parse().ok())
        .unwrap_or_else(|| panic!("id is not <stream>-<seq>: {id}"))
}

fn stream_part(e: &SseEvent) -> String {
    let id =
        e.id.as_deref()
            .unwrap_or_else(|| panic!("event without id: {e:?}"));
    id.rsplit_once('-')
        .map(|(s, _)| s.to_owned())
        .expect("<stream>-<seq>")
}

fn progress_of(m: &Value) -> u64 {
    assert_eq!(m["method"], "notifications/progress", "{m}");
    m["params"]["progress"]
        .as_f64()
        .unwrap_or_else(|| panic!("{m}")) as u64
}

/// Restart (issue: "Restart"): a client calls a slow tool that streams
/// progress; mcpd is killed with SIGKILL after some events; a new mcpd on
/// the same Redis serves GET with `Last-Event-ID`: the client gets every
/// event it had not seen, in order, none twice, then a clear error for the
/// request that died with the old process (not silence). The session keeps
/// working: new requests, its client capabilities (elicitation), its
/// resource subscription (updates on a new GET stream), finished streams
/// still replay, and DELETE ends it (404 after, keys gone from Redis).
#[tokio::test]
async fn a_killed_mcpd_is_replaced_and_the_client_misses_nothing() {
    let redis = RedisServer::start();
    let mut mcpd = mcpd_on(&redis.url(), &[]);
    let mut c = McpClient::new(&mcpd.url);
    c.initialize().await;
    let sid = c.session.clone().expect("a session");

    assert_eq!(
        c.call("resources/subscribe", json!({"uri":"demo://clock"}))
            .await,
        json!({})
    );
    // A stream that finishes before the kill.
    let (_, _, mut done) = c
        .request_stream(
            1,
            "tools/call",
            call_params(
                "countdown",
                json!({"steps":3,"interval_ms":5}),
                Some(json!("done")),
            ),
        )
        .await;
    let finished = done.collect_all(WAIT).await;
    assert_eq!(
        finished.len(),
        5,
        "priming, 3 progress, response: {finished:?}"
    );

    // The slow call: 40 steps of 100 ms, killed after 3.
    let (status, _, mut st) = c
        .request_stream(
            2,
            "tools/call",
            call_params(
                "countdown",
                json!({"steps":40,"interval_ms":100}),
                Some(json!("slow")),
            ),
        )
        .await;
    assert_eq!(status, 200);
    let priming = next_event(&mut st).await;
    assert!(
        priming.data.is_empty() && priming.id.is_some(),
        "{priming:?}"
    );
    let stream = stream_part(&priming);
    let mut seen: Vec<SseEvent> = Vec::new();
    while seen.len() < 3 {
        let (e, m) = next_message(&mut st).await;
        assert_eq!(progress_of(&m), seen.len() as u64 + 1);
        seen.push(e);
    }
    wait_record(&redis, &sid, "demo://clock").await;
    mcpd.kill();
    // Whatever was already on the wire is seen too; then the connection ends.
    for e in st.collect_all(WAIT).await {
        let m = e.json().expect("a message");
        assert_eq!(progress_of(&m), seen.len() as u64 + 1, "{m}");
        seen.push(e);
    }
    let last_seen = seen.last().unwrap().clone();
    let last_progress = seen.len() as u64;

    mcpd.restart();
    let c = fresh(&c);

    // Resume: the rest of the progress, then the error for request 2, then
    // the end. The new process can tell the old one is dead only once its
    // liveness key has expired, so the error may take several seconds.
    let t = Instant::now();
    let r = bounded("resume", c.get(last_seen.id.as_deref())).await;
    assert_eq!(r.status().as_u16(), 200);
    let resumed = SseStream::new(r).collect_all(DEAD_OWNER_WAIT).await;
    eprintln!(
        "the lost request's error came {:?} after the resume",
        t.elapsed()
    );
    let mut prev = seq_of(&last_seen);
    for e in &resumed {
        assert_eq!(stream_part(e), stream, "{e:?}");
        assert!(seq_of(e) > prev, "ids increase: {resumed:?}");
        prev = seq_of(e);
    }
    let msgs: Vec<Value> = resumed
        .iter()
        .map(|e| e.json().expect("a message"))
        .collect();
    let (err, progress) = msgs.split_last().expect("at least the error");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(
            progress_of(p),
            last_progress + 1 + i as u64,
            "in order, none twice: {msgs:?}"
        );
    }
    assert!(
        last_progress + (progress.len() as u64) < 40,
        "the request cannot have finished: {msgs:?}"
    );
    assert_eq!(err["id"], 2, "{err}");
    assert_eq!(err["error"]["code"], -32603, "{err}");
    assert_eq!(err["error"]["message"], LOST, "{err}");
    assert!(err.get("result").is_none(), "{err}");

    // The error is stored once: resuming again replays the same events.
    let again = bounded(
        "second resume",
        SseStream::new(c.get(last_seen.id.as_deref()).await).collect_all(WAIT),
    )
    .await;
    assert_eq!(again, resumed);
    let r = c.get(resumed.last().unwrap().id.as_deref()).await;
    assert_eq!(r.status().as_u16(), 200);
    assert!(SseStream::new(r).collect_all(WAIT).await.is_empty());

    // A stream that had finished replays from Redis as it was.
    let replay = SseStream::new(c.get(finished[0].id.as_deref()).await)
        .collect_all(WAIT)
        .await;
    assert_eq!(replay, finished[1..].to_vec());

    // The session serves new requests.
    let r = c
        .call(
            "tools/call",
            call_params("echo", json!({"message":"after"}), None),
        )
        .await;
    assert_eq!(tool_text(&r), "after");
    let r = c
        .request(
            "tools/call",
            call_params(
                "countdown",
                json!({"steps":2,"interval_ms":5}),
                Some(json!("new")),
            ),
        )
        .await;
    assert_eq!(
        r.events.iter().filter(|e| e.id.is_none()).count(),
        0,
        "{r:?}"
    );
    assert_eq!(tool_text(&r.last()["result"]), "done");
    // Its client capabilities came back: elicitation works.
    let (_, _, mut st) = c
        .request_stream(
            3,
            "tools/call",
            json!({"name":"ask_user","arguments":{"question":"Name?"}}),
        )
        .await;
    let (_, req) = next_message(&mut st).await;
    assert_eq!(req["method"], "elicitation/create", "{req}");
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"action":"accept","content":{"answer":"x"}}}))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    let (_, resp) = read_until_response(&mut st, &json!(3)).await;
    assert_eq!(tool_text(&resp["result"]), "x");
    // Its subscription came back: a new GET stream gets clock updates.
    let r = c.get(None).await;
    assert_eq!(r.status().as_u16(), 200);
    let mut get = SseStream::new(r);
    assert!(next_event(&mut get).await.data.is_empty(), "priming event");
    let (_, m) = next_message(&mut get).await;
    assert_eq!(m["method"], "notifications/resources/updated", "{m}");
    assert_eq!(m["params"]["uri"], "demo://clock", "{m}");
    drop(get);

    // DELETE ends it everywhere.
    assert!(!session_keys(&redis, &sid).is_empty());
    assert_eq!(c.delete().await.status().as_u16(), 200);
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":9,"method":"ping"}))
        .await;
    assert_eq!(r.status, 404, "{r:?}");
    assert_eq!(c.get(None).await.status().as_u16(), 404);
    // Only the tombstone stays (it expires), so no replica mistakes the
    // deletion for lost data and writes the record back.
    assert_eq!(
        session_keys(&redis, &sid),
        vec![format!("mcpd:{{{sid}}}:deleted")]
    );
}

async fn log_call(c: &McpClient) -> mcpd_testkit::Reply {
    c.request(
        "tools/call",
        call_params("test_tool_with_logging", json!({}), None),
    )
    .await
}

/// Restart: `logging/setLevel` survives it (the rebuilt session filters
/// log messages at the level set before the kill).
#[tokio::test]
async fn a_session_keeps_its_log_level_across_a_restart() {
    let redis = RedisServer::start();
    let mut mcpd = mcpd_on(&redis.url(), &["--toolset", "conformance"]);
    let mut c = McpClient::new(&mcpd.url);
    c.initialize().await;
    let sid = c.session.clone().unwrap();
    let logs = |r: &mcpd_testkit::Reply| {
        r.messages()
            .into_iter()
            .filter(|m| m["method"] == "notifications/message")
            .count()
    };
    assert_eq!(
        logs(&log_call(&c).await),
        3,
        "info messages before setLevel"
    );
    assert_eq!(
        c.call("logging/setLevel", json!({"level":"error"})).await,
        json!({})
    );
    assert_eq!(logs(&log_call(&c).await), 0);
    wait_record(&redis, &sid, "\"level\":\"error\"").await;

    mcpd.kill();
    mcpd.restart();
    let c = fresh(&c);
    let r = log_call(&c).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.last()["result"].is_object(), "{r:?}");
    assert_eq!(logs(&r), 0, "still at level error: {:?}", r.messages());
    assert_eq!(
        c.call("logging/setLevel", json!({"level":"debug"})).await,
        json!({})
    );
    assert_eq!(logs(&log_call(&c).await), 3);
}

/// GET `/readyz` at the server root: status and body.
async fn readyz(http: &reqwest::Client, s: &TestServer) -> (u16, String) {
    let r = http
        .get(format!("http://{}/readyz", s.addr))
        .send()
        .await
        .expect("readyz answers");
    (r.status().as_u16(), r.text().await.unwrap_or_default())
}

/// Redis killed mid-run and restarted (empty): `/readyz` says 503;
/// `initialize` is 503 with `Retry-After` and a JSON-RPC error naming the
/// session store; a session this process holds is still served, its SSE
/// events arrive without ids (they could not be logged); a resumption is
/// 503; nothing hangs (`redis_timeout_ms` 500, every call bounded). When
/// Redis is back, `/readyz` is 200 and `initialize` works, without
/// restarting mcpd.
#[tokio::test]
async fn a_redis_outage_gives_the_documented_errors_and_mcpd_recovers() {
    let mut redis = RedisServer::start();
    let s = TestServer::start_configured(|c| {
        use_redis(c, &redis);
        c.store.redis_timeout_ms = 500;
    });
    let http = reqwest::Client::new();
    assert_eq!(readyz(&http, &s).await, (200, "ready".into()));
    let c = session(&s).await;
    let (_, _, mut st) = c
        .request_stream(
            1,
            "tools/call",
            call_params(
                "countdown",
                json!({"steps":2,"interval_ms":5}),
                Some(json!("a")),
            ),
        )
        .await;
    let before = st.collect_all(WAIT).await;
    assert!(before.iter().all(|e| e.id.is_some()), "{before:?}");

    redis.kill();

    // Readiness fails fast.
    let (status, body) = bounded("/readyz", readyz(&http, &s)).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.starts_with("not ready: "), "{body}");

    // No new session: 503, Retry-After, a JSON-RPC error naming the store.
    let r = bounded("initialize", s.client().post(&init_body("2025-11-25"))).await;
    assert_transport_error(&r, 503, -32005);
    assert_eq!(header(&r, "retry-after"), "1", "{r:?}");
    assert!(header(&r, "mcp-session-id").is_empty(), "{r:?}");
    let msg = r.json.as_ref().unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(msg.contains("the session store is unavailable"), "{msg}");

    // The session this process holds is served: a JSON answer...
    let r = bounded(
        "echo",
        c.request(
            "tools/call",
            call_params("echo", json!({"message":"m"}), None),
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(tool_text(&r.last()["result"]), "m");
    // ...and an SSE answer, whose events could not be logged: no ids.
    let r = bounded(
        "countdown",
        c.request(
            "tools/call",
            call_params(
                "countdown",
                json!({"steps":3,"interval_ms":10}),
                Some(json!("b")),
            ),
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.content_type().starts_with("text/event-stream"), "{r:?}");
    assert!(r.events.iter().all(|e| e.id.is_none()), "{:?}", r.events);
    let msgs = r.messages();
    assert_eq!(msgs.len(), 4, "3 progress and the response: {msgs:?}");
    assert_eq!(tool_text(&r.last()["result"]), "done");

    // Resuming needs the log: 503 with Retry-After and a JSON-RPC error.
    let resp = bounded("resume", c.get(before[0].id.as_deref())).await;
    assert_eq!(resp.status().as_u16(), 503);
    assert_eq!(resp.headers()["retry-after"], "1");
    let body: Value = resp.json().await.expect("a JSON-RPC error body");
    assert_eq!(body["id"], Value::Null, "{body}");
    assert_eq!(body["error"]["code"], -32000, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("event log is unavailable"),
        "{body}"
    );

    // Redis comes back (empty: its data is lost): ready within 5 s, no mcpd restart.
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, body) = bounded("/readyz", readyz(&http, &s)).await;
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not ready 5 s after Redis came back: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let fresh_session = bounded("initialize", session(&s)).await;
    assert!(fresh_session.session.is_some());
    // Events are logged again, for the new session and the one held here:
    // both can resume.
    for c in [&fresh_session, &c] {
        let (_, _, mut st) = c
            .request_stream(
                7,
                "tools/call",
                call_params(
                    "countdown",
                    json!({"steps":2,"interval_ms":5}),
                    Some(json!("c")),
                ),
            )
            .await;
        let events = bounded("countdown", st.collect_all(WAIT)).await;
        assert!(events.iter().all(|e| e.id.is_some()), "{events:?}");
        let replay = bounded(
            "resume",
            SseStream::new(c.get(events[0].id.as_deref()).await).collect_all(WAIT),
        )
        .await;
        assert_eq!(replay, events[1..].to_vec());
    }
}

/// Sends `signal` (e.g. `STOP`, `CONT`) to process `pid`.
fn signal(signal: &str, pid: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{signal}"), pid])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -{signal} {pid}");
}

/// Redis stalled (SIGSTOP: the connection stays open, nothing answers)
/// rather than gone: every store call gives up after `redis_timeout_ms`, so
/// `/readyz`, `initialize` and a resumption answer 503 within about that
/// time, and a session held here still gets its answers (events without
/// ids). After SIGCONT, with Redis's data intact, everything works again,
/// including resuming a stream logged before the stall.
#[tokio::test]
async fn a_stalled_redis_times_out_instead_of_hanging() {
    let redis = RedisServer::start();
    let info = redis_cli_on(&redis, &["INFO", "server"]);
    let pid = info
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .expect("process_id in INFO")
        .trim()
        .to_owned();
    let s = TestServer::start_configured(|c| {
        use_redis(c, &redis);
        c.store.redis_timeout_ms = 500;
    });
    let http = reqwest::Client::new();
    let c = session(&s).await;
    let (_, _, mut st) = c
        .request_stream(
            1,
            "tools/call",
            call_params(
                "countdown",
                json!({"steps":2,"interval_ms":5}),
                Some(json!("a")),
            ),
        )
        .await;
    let before = st.collect_all(WAIT).await;
    assert!(before.iter().all(|e| e.id.is_some()), "{before:?}");

    signal("STOP", &pid);
    // One store call: the 500 ms timeout, plus slack.
    let quick = Duration::from_secs(3);

    let t = Instant::now();
    let (status, body) = bounded("/readyz", readyz(&http, &s)).await;
    assert_eq!(status, 503, "{body}");
    assert!(t.elapsed() < quick, "/readyz took {:?}", t.elapsed());

    let t = Instant::now();
    let r = bounded("initialize", s.client().post(&init_body("2025-11-25"))).await;
    assert_transport_error(&r, 503, -32005);
    assert_eq!(header(&r, "retry-after"), "1", "{r:?}");
    assert!(t.elapsed() < quick, "initialize took {:?}", t.elapsed());

    let r = bounded(
        "countdown",
        c.request(
            "tools/call",
            call_params(
                "countdown",
                json!({"steps":2,"interval_ms":5}),
                Some(json!("b")),
            ),
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.events.iter().all(|e| e.id.is_none()), "{:?}", r.events);
    assert_eq!(tool_text(&r.last()["result"]), "done");

    let t = Instant::now();
    let resp = bounded("resume", c.get(before[0].id.as_deref())).await;
    assert_eq!(resp.status().as_u16(), 503);
    assert!(t.elapsed() < quick, "resume took {:?}", t.elapsed());

    signal("CONT", &pid);
    let deadline = Instant::now() + Duration::from_secs(5);
    while bounded("/readyz", readyz(&http, &s)).await.0 != 200 {
        assert!(Instant::now() < deadline, "not ready 5 s after SIGCONT");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bounded("initialize", session(&s)).await;
    let replay = bounded(
        "resume",
        SseStream::new(c.get(before[0].id.as_deref()).await).collect_all(WAIT),
    )
    .await;
    assert_eq!(replay, before[1..].to_vec());
}

/// `redis-cli -p PORT ARGS` on a cluster node.
fn node_cli(port: u16, args: &[&str]) -> String {
    let p = port.to_string();
    let mut all = vec!["-p", p.as_str(), "--raw"];
    all.extend_from_slice(args);
    redis_cli(&all)
}

/// Redis Cluster (issue: three `redis-server --cluster-enabled yes` joined
/// with `redis-cli --cluster create`, started by the test): initialize, an
/// SSE call with progress whose connection is dropped, resumed with
/// `Last-Event-ID` to its end; then another server on the same cluster (a
/// restart) rebuilds the session, serves it and resumes its streams; every
/// key of the session hashes to one slot (the `{session}` hash tag).
#[tokio::test]
async fn redis_cluster_resumes_rebuilds_and_keeps_a_session_in_one_slot() {
    let cluster = RedisCluster::start();
    let url = cluster.url();
    let on_cluster = |c: &mut Config| {
        c.store.backend = mcpd::StoreBackend::Redis;
        c.store.redis_url = url.clone();
        c.store.redis_cluster = true;
    };
    let s1 = TestServer::start_configured(on_cluster);
    let c = bounded("initialize", session(&s1)).await;
    let sid = c.session.clone().unwrap();

    let (status, _, mut st) = c
        .request_stream(
            1,
            "tools/call",
            call_params(
                "countdown",
                json!({"steps":5,"interval_ms":100}),
                Some(json!("k")),
            ),
        )
        .await;
    assert_eq!(status, 200);
    let priming = next_event(&mut st).await;
    assert!(
        priming.data.is_empty() && priming.id.is_some(),
        "{priming:?}"
    );
    let (e1, m1) = next_message(&mut st).await;
    assert_eq!(progress_of(&m1), 1);
    drop(st);
    let rest = bounded(
        "resume",
        SseStream::new(c.get(e1.id.as_deref()).await).collect_all(WAIT),
    )
    .await;
    let msgs: Vec<Value> = rest.iter().map(|e| e.json().expect("a message")).collect();
    let (resp, progress) = msgs.split_last().unwrap();
    assert_eq!(
        progress.iter().map(progress_of).collect::<Vec<_>>(),
        vec![2, 3, 4, 5],
        "{msgs:?}"
    );
    assert_eq!(resp["id"], 1);
    assert_eq!(tool_text(&resp["result"]), "done");
    let mut all = vec![e1.clone()];
    all.extend(rest);

    // A restart: a new server on the same cluster.
    drop(s1);
    let s2 = TestServer::start_configured(on_cluster);
    let mut c = McpClient::new(&s2.url);
    c.session = Some(sid.clone());
    c.version = Some(INIT_VERSION.into());
    let r = bounded(
        "echo",
        c.call(
            "tools/call",
            call_params("echo", json!({"message":"hi"}), None),
        ),
    )
    .await;
    assert_eq!(tool_text(&r), "hi");
    let replay = bounded(
        "resume after restart",
        SseStream::new(c.get(priming.id.as_deref()).await).collect_all(WAIT),
    )
    .await;
    assert_eq!(replay, all);
    let (_, _, mut st) = c
        .request_stream(
            2,
            "tools/call",
            call_params(
                "countdown",
                json!({"steps":2,"interval_ms":5}),
                Some(json!("n")),
            ),
        )
        .await;
    let events = bounded("countdown", st.collect_all(WAIT)).await;
    assert!(events.iter().all(|e| e.id.is_some()), "{events:?}");
    let replay = bounded(
        "resume",
        SseStream::new(c.get(events[0].id.as_deref()).await).collect_all(WAIT),
    )
    .await;
    assert_eq!(replay, events[1..].to_vec());

    // The session's keys, wherever they are: one slot, one node.
    let mut keys: Vec<(String, u16)> = Vec::new();
    for &p in &cluster.ports {
        for k in node_cli(p, &["KEYS", "mcpd:*"]).lines() {
            if k.contains(&sid) {
                keys.push((k.to_owned(), p));
            }
        }
    }
    let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
    assert!(
        names.contains(&format!("mcpd:{{{sid}}}:s").as_str()),
        "{names:?}"
    );
    assert!(
        names.contains(&format!("mcpd:{{{sid}}}:streams").as_str()),
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|k| k.contains("}:e:")).count(),
        2,
        "one stream key per SSE stream: {names:?}"
    );
    let port = cluster.ports[0];
    let slot = node_cli(port, &["CLUSTER", "KEYSLOT", &sid]);
    for (k, p) in &keys {
        assert_eq!(node_cli(port, &["CLUSTER", "KEYSLOT", k]), slot, "{k}");
        assert_eq!(*p, keys[0].1, "all on one node: {keys:?}");
    }
}

/// Sentinel-managed primaries: mcpd finds the primary through a Redis
/// Sentinel, and after the primary dies and the Sentinel promotes its
/// replica, mcpd follows (new sessions, logged and resumable streams) without
/// a restart. While the failover runs, requests that need Redis get 503s,
/// never a hang.
#[tokio::test]
async fn a_sentinel_failover_is_followed() {
    let mut sentinel = tokio::task::spawn_blocking(mcpd_testkit::RedisSentinel::start)
        .await
        .expect("sentinel starts");
    let url = sentinel.url();
    let server = TestServer::start_configured(move |c| {
        c.store.backend = mcpd::StoreBackend::Redis;
        c.store.redis_url = url;
        c.store.redis_sentinel_service = mcpd_testkit::SENTINEL_SERVICE.into();
        c.store.redis_timeout_ms = 500;
    });
    let mut before = server.client();
    bounded("initialize through the Sentinel", before.initialize()).await;
    let r = bounded(
        "echo",
        before.call(
            "tools/call",
            call_params("echo", json!({"message": "hi"}), None),
        ),
    )
    .await;
    assert_eq!(tool_text(&r), "hi");
    // The session record is on the primary the Sentinel named.
    let sid = before.session.clone().expect("session id");
    let keys = Command::new("redis-cli")
        .args([
            "-p",
            &sentinel.primary_port.to_string(),
            "exists",
            &format!("mcpd:{{{sid}}}:s"),
        ])
        .output()
        .expect("redis-cli");
    assert_eq!(
        String::from_utf8_lossy(&keys.stdout).trim(),
        "1",
        "the record is on the primary"
    );

    let sentinel = tokio::task::spawn_blocking(move || {
        sentinel.fail_over();
        sentinel
    })
    .await
    .expect("failover");

    // mcpd asks the Sentinel again after failing on the old primary.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut after = server.client();
    loop {
        let r = bounded(
            "initialize after the failover",
            after.post(&init_body(INIT_VERSION)),
        )
        .await;
        if r.status == 200 {
            after.session = r
                .headers
                .get("mcp-session-id")
                .map(|v| v.to_str().unwrap().to_owned());
            after.version = Some(INIT_VERSION.into());
            break;
        }
        assert_eq!(r.status, 503, "during the failover: 503, got {r:?}");
        assert!(
            Instant::now() < deadline,
            "mcpd did not follow the failover within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let new_sid = after.session.clone().expect("session id");
    let keys = Command::new("redis-cli")
        .args([
            "-p",
            &sentinel.replica_port.to_string(),
            "exists",
            &format!("mcpd:{{{new_sid}}}:s"),
        ])
        .output()
        .expect("redis-cli");
    assert_eq!(
        String::from_utf8_lossy(&keys.stdout).trim(),
        "1",
        "the new record is on the promoted replica"
    );
    // Streams are logged on the new primary: events carry ids and resume.
    let (status, _, mut s) = after
        .request_stream(
            9,
            "tools/call",
            call_params(
                "countdown",
                json!({"steps": 3, "interval_ms": 20}),
                Some(json!("p")),
            ),
        )
        .await;
    assert_eq!(status, 200);
    let events = s.collect_all(Duration::from_secs(10)).await;
    assert!(
        events
            .iter()
            .all(|e| e.id.as_deref().is_some_and(|id| !id.is_empty())),
        "every event has an id: {events:?}"
    );
    let first = events
        .iter()
        .find(|e| e.json().is_some())
        .and_then(|e| e.id.clone())
        .expect("an event");
    let resumed = SseStream::new(after.get(Some(&first)).await)
        .collect_all(Duration::from_secs(10))
        .await;
    assert!(
        resumed
            .iter()
            .any(|e| e.json().is_some_and(|m| m["id"] == json!(9))),
        "the resumed stream ends with the response"
    );
    drop(server);
    let _ = sentinel.dir();
}
