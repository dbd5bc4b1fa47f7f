//! Scale-out harness: several mcpd processes on one `redis-server`, and a
//! round-robin HTTP reverse proxy in front of them, so every HTTP request of
//! a session lands on a different replica (no sticky routing).
//!
//! - [`TestCluster`]: a [`RedisServer`], `n` [`McpdProcess`]es on it (each
//!   logging at `info` to its own file, see [`TestCluster::logs`]) and a
//!   [`RoundRobinProxy`]. Everything is killed on drop.
//! - [`RoundRobinProxy`]: an actix-web server on `127.0.0.1:0` forwarding
//!   each request to the next upstream in turn with reqwest (a new upstream
//!   connection per request, so a restarted replica is never reached through
//!   a stale pooled connection), streaming the response body back chunk by
//!   chunk (SSE flows through unbuffered). A request whose upstream cannot be
//!   reached, or fails before its response head, is answered `502` with a
//!   plain-text reason: the client may retry it (nothing was answered). Each
//!   forwarded response carries `x-rr-upstream: <index>`, the replica that
//!   served it.

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use futures_util::StreamExt;

use crate::redis::{RedisServer, TempDir};
use crate::{McpClient, McpdProcess};

/// The response header naming the upstream (replica index) that served a request.
pub const UPSTREAM_HEADER: &str = "x-rr-upstream";

/// One forwarded request, as the proxy saw it.
#[derive(Debug, Clone)]
pub struct Hit {
    pub upstream: usize,
    pub method: String,
    /// The upstream's status; `None` when it could not be reached (answered 502).
    pub status: Option<u16>,
}

struct ProxyState {
    upstreams: Vec<String>,
    next: AtomicUsize,
    hits: Mutex<Vec<Hit>>,
}

/// A round-robin HTTP/1.1 reverse proxy on loopback, stopped on drop.
pub struct RoundRobinProxy {
    /// Base URL, `http://127.0.0.1:PORT`.
    pub base: String,
    state: Arc<ProxyState>,
    handle: actix_web::dev::ServerHandle,
    thread: Option<JoinHandle<()>>,
}

const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
];

fn hop_by_hop(name: &str) -> bool {
    HOP_BY_HOP.iter().any(|h| name.eq_ignore_ascii_case(h))
}

async fn forward(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<ProxyState>,
    http: web::Data<reqwest::Client>,
) -> HttpResponse {
    let i = state.next.fetch_add(1, Ordering::Relaxed) % state.upstreams.len();
    let path = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let url = format!("{}{path}", state.upstreams[i]);
    let method = reqwest::Method::from_bytes(req.method().as_str().as_bytes())
        .unwrap_or(reqwest::Method::GET);
    let mut b = http.request(method, &url);
    for (name, value) in req.headers() {
        if !hop_by_hop(name.as_str()) {
            b = b.header(name.as_str(), value.as_bytes());
        }
    }
    if !body.is_empty() {
        b = b.body(body);
    }
    let record = |status: Option<u16>| {
        state.hits.lock().unwrap().push(Hit {
            upstream: i,
            method: req.method().to_string(),
            status,
        });
    };
    let resp = match b.send().await {
        Ok(r) => r,
        Err(e) => {
            record(None);
            return HttpResponse::BadGateway()
                .insert_header((UPSTREAM_HEADER, i.to_string()))
                .content_type("text/plain")
                .body(format!(
                    "round-robin proxy: replica {i} ({url}) unreachable: {e}"
                ));
        }
    };
    let status = resp.status().as_u16();
    record(Some(status));
    let mut out = HttpResponse::build(
        actix_web::http::StatusCode::from_u16(status)
            .unwrap_or(actix_web::http::StatusCode::BAD_GATEWAY),
    );
    for (name, value) in resp.headers() {
        if !hop_by_hop(name.as_str()) {
            out.append_header((name.as_str(), value.as_bytes()));
        }
    }
    out.insert_header((UPSTREAM_HEADER, i.to_string()));
    let len = resp.content_length();
    let stream = resp.bytes_stream().map(|r| {
        r.map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                format!("upstream body failed: {e}"),
            )
        })
    });
    match len {
        Some(n) => out.no_chunking(n).streaming(stream),
        None => out.streaming(stream),
    }
}

impl RoundRobinProxy {
    /// A proxy over `upstreams` (base URLs such as `http://127.0.0.1:PORT`).
    pub fn start(upstreams: Vec<String>) -> Self {
        assert!(!upstreams.is_empty(), "a proxy needs upstreams");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(ProxyState {
            upstreams,
            next: AtomicUsize::new(0),
            hits: Mutex::new(Vec::new()),
        });
        let shared = web::Data::from(state.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            actix_rt::System::new().block_on(async move {
                let server = HttpServer::new(move || {
                    // One upstream client per worker; no idle connections kept.
                    let http = reqwest::Client::builder()
                        .pool_max_idle_per_host(0)
                        .connect_timeout(Duration::from_secs(2))
                        .build()
                        .expect("reqwest client");
                    App::new()
                        .app_data(shared.clone())
                        .app_data(web::Data::new(http))
                        .app_data(web::PayloadConfig::new(64 * 1024 * 1024))
                        .default_service(web::to(forward))
                })
                .workers(4)
                // Clients keep pooled connections for 90 s: a proxy closing
                // idle ones after actix's default 5 s races their reuse
                // ("error sending request"), which is no replica's fault.
                .keep_alive(Duration::from_secs(300))
                .disable_signals()
                .shutdown_timeout(1)
                .listen(listener)
                .expect("proxy listens")
                .run();
                tx.send(server.handle()).expect("handle sent");
                let _ = server.await;
            });
        });
        let handle = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("proxy started");
        Self {
            base: format!("http://{addr}"),
            state,
            handle,
            thread: Some(thread),
        }
    }

    /// Every request forwarded so far, in order.
    pub fn hits(&self) -> Vec<Hit> {
        self.state.hits.lock().unwrap().clone()
    }

    /// How many requests each upstream received (including 502s).
    pub fn hits_per_upstream(&self) -> Vec<usize> {
        let mut n = vec![0; self.state.upstreams.len()];
        for h in self.hits() {
            n[h.upstream] += 1;
        }
        n
    }
}

impl Drop for RoundRobinProxy {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(handle.stop(false));
        })
        .join()
        .ok();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `n` mcpd processes sharing one `redis-server`, behind a round-robin proxy.
pub struct TestCluster {
    pub proxy: RoundRobinProxy,
    pub replicas: Vec<McpdProcess>,
    pub redis: RedisServer,
    log_dir: TempDir,
    /// The MCP endpoint path, e.g. `/mcp`.
    path: String,
}

impl TestCluster {
    /// `n` replicas of `bin` (pass `env!("CARGO_BIN_EXE_mcpd")`) with
    /// `--store redis --redis-url <url>` and `extra` flags, each logging at
    /// `info` to its own file, and a proxy in front.
    pub fn start(bin: &str, n: usize, extra: &[&str]) -> Self {
        Self::start_on(bin, n, extra, &[], RedisServer::start())
    }

    /// Like [`Self::start`], on `redis`, with `env` added to each replica's.
    pub fn start_on(
        bin: &str,
        n: usize,
        extra: &[&str],
        env: &[(&str, &str)],
        redis: RedisServer,
    ) -> Self {
        let log_dir = TempDir::new("cluster-logs");
        let url = redis.url();
        let mut args = vec!["--store", "redis", "--redis-url", url.as_str()];
        args.extend_from_slice(extra);
        let replicas: Vec<McpdProcess> = (0..n)
            .map(|i| {
                let log = log_dir.0.join(format!("replica-{i}.log"));
                // No `stateless.state_keys`: the replicas share the MRTR
                // key ring through Redis, as a new user's deployment does.
                let mut vars = vec![("MCPD_LOG_LEVEL", "info")];
                vars.extend_from_slice(env);
                McpdProcess::start_with(bin, &args, &vars, Some(&log))
            })
            .collect();
        let path = replicas[0]
            .url
            .splitn(4, '/')
            .nth(3)
            .map(|p| format!("/{p}"))
            .unwrap_or_else(|| "/mcp".into());
        let proxy = RoundRobinProxy::start(
            replicas
                .iter()
                .map(|r| format!("http://127.0.0.1:{}", r.port))
                .collect(),
        );
        let c = Self {
            proxy,
            replicas,
            redis,
            log_dir,
            path,
        };
        for i in 0..n {
            c.wait_ready(i);
        }
        c
    }

    /// The MCP endpoint through the round-robin proxy.
    pub fn url(&self) -> String {
        format!("{}{}", self.proxy.base, self.path)
    }

    /// Every replica's listening address, in order (for a balancer in front).
    pub fn addrs(&self) -> Vec<std::net::SocketAddr> {
        self.replicas
            .iter()
            .map(|r| std::net::SocketAddr::from(([127, 0, 0, 1], r.port)))
            .collect()
    }

    /// Replica `i`'s own MCP endpoint (no proxy).
    pub fn replica_url(&self, i: usize) -> String {
        self.replicas[i].url.clone()
    }

    /// A client that talks through the proxy (round robin).
    pub fn client(&self) -> McpClient {
        McpClient::new(&self.url())
    }

    /// The session of `c` (same id counter, so request ids never collide),
    /// talking to replica `i` only, on a fresh connection pool.
    pub fn client_on(&self, i: usize, c: &McpClient) -> McpClient {
        let mut n = c.clone();
        n.url = self.replica_url(i);
        n.http = reqwest::Client::new();
        n
    }

    /// SIGKILL replica `i`.
    pub fn kill(&mut self, i: usize) {
        self.replicas[i].kill();
    }

    /// SIGTERM replica `i` (a graceful stop; it exits by itself).
    pub fn terminate(&self, i: usize) {
        if let Some(pid) = self.replicas[i].pid() {
            crate::process::signal(pid, "-TERM");
        }
    }

    /// SIGKILL replica `i`, start it again on the same port, and wait until
    /// its `/readyz` answers 200.
    pub fn restart(&mut self, i: usize) {
        self.replicas[i].restart();
        self.wait_ready(i);
    }

    /// Blocks until replica `i` answers `GET /readyz` with 200 (10 s at most).
    pub fn wait_ready(&self, i: usize) {
        let port = self.replicas[i].port;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if readyz(port) == Some(200) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "replica {i} (port {port}) not ready within 10 s\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The log file of replica `i` (all its starts, appended).
    pub fn log_path(&self, i: usize) -> PathBuf {
        self.log_dir.0.join(format!("replica-{i}.log"))
    }

    /// Every replica's log, for failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for i in 0..self.replicas.len() {
            let text = std::fs::read_to_string(self.log_path(i)).unwrap_or_default();
            out.push_str(&format!("===== replica {i} log =====\n{text}\n"));
        }
        out
    }

    /// The last `bytes` of every replica's log.
    pub fn logs_tail(&self, bytes: usize) -> String {
        let mut out = String::new();
        for i in 0..self.replicas.len() {
            let text = std::fs::read_to_string(self.log_path(i)).unwrap_or_default();
            let cut = text.len().saturating_sub(bytes);
            let start = (cut..text.len())
                .find(|&k| text.is_char_boundary(k))
                .unwrap_or(text.len());
            out.push_str(&format!(
                "===== replica {i} log (last {bytes} bytes) =====\n{}\n",
                &text[start..]
            ));
        }
        out
    }

    /// Copies every replica's log to `dir` (e.g. to keep them after a failure).
    pub fn save_logs(&self, dir: &std::path::Path) {
        let _ = std::fs::create_dir_all(dir);
        for i in 0..self.replicas.len() {
            let _ = std::fs::copy(self.log_path(i), dir.join(format!("replica-{i}.log")));
        }
    }
}

/// The status of a plain `GET /readyz` on `port` (blocking, 1 s bound).
fn readyz(port: u16) -> Option<u16> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
    s.write_all(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut buf = [0u8; 32];
    let n = s.read(&mut buf).ok()?;
    let head = std::str::from_utf8(&buf[..n]).ok()?;
    head.split_whitespace().nth(1)?.parse().ok()
}
