//! A real nginx in front of a server under test, as a reverse proxy with
//! the directives a test gives it (buffering, timeouts). Its config, logs,
//! pid and temp files live in a temp dir; it runs in the foreground and is
//! killed on drop. A missing nginx fails the test with the command that
//! installs it.
//!
//! The port is bound here (127.0.0.1:0) and the listening socket handed to
//! nginx as its stdin, named in the `NGINX` variable nginx reads inherited
//! sockets from (as on a binary upgrade): no port is picked and bound later.

use std::net::{SocketAddr, TcpListener};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::redis::TempDir;

fn nginx_binary() -> PathBuf {
    for candidate in ["nginx", "/usr/sbin/nginx"] {
        let found = Command::new(candidate)
            .arg("-v")
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if found {
            return candidate.into();
        }
    }
    panic!("nginx is not installed: run `apt-get install -y nginx` (scripts/test.sh does this)");
}

/// nginx proxying `127.0.0.1:PORT` to an upstream.
pub struct Nginx {
    dir: TempDir,
    child: Option<Child>,
    pub addr: SocketAddr,
}

impl Nginx {
    /// Proxies to `upstream` with `directives` (e.g. `"proxy_read_timeout 3s;"`)
    /// in the location, after the defaults an SSE proxy needs (HTTP/1.1 to
    /// the upstream, the client's Host passed on).
    pub fn start(upstream: SocketAddr, directives: &str) -> Self {
        let directives = format!("{HTTP11}\n            {directives}");
        Self::launch(|_, listen| {
            server(
                &listen.to_string(),
                &format!("http://{upstream}"),
                &directives,
            )
        })
    }

    /// Round robin over `upstreams`, no affinity, unbuffered (what a
    /// deployment of mcpd replicas behind one balancer looks like). A
    /// request to a replica that is down goes to the next. The access log
    /// names the upstream of every request ([`Nginx::upstreams_hit`]).
    pub fn start_round_robin(upstreams: &[SocketAddr]) -> Self {
        let servers: String = upstreams
            .iter()
            .map(|u| format!("        server {u} max_fails=0;\n"))
            .collect();
        let directives = format!(
            "{HTTP11}\n            proxy_buffering off;\n            proxy_read_timeout 300s;\n            proxy_next_upstream error timeout http_502 non_idempotent;"
        );
        Self::launch(|_, listen| {
            format!(
                "    log_format upstream '$upstream_addr';\n    upstream mcpd {{\n{servers}    }}\n"
            ) + &server(&listen.to_string(), "http://mcpd", &directives).replace(
                "location / {",
                "access_log upstream.log upstream;\n        location / {",
            )
        })
    }

    /// The upstream of each request so far, in order (round robin only).
    /// How many requests each of `upstreams` served, from the `skip`th on.
    pub fn hits_per(&self, upstreams: &[SocketAddr], skip: usize) -> Vec<usize> {
        let hits = self.upstreams_hit();
        let hits = hits.get(skip..).unwrap_or_default();
        upstreams
            .iter()
            .map(|u| hits.iter().filter(|h| h.contains(&u.to_string())).count())
            .collect()
    }

    pub fn upstreams_hit(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.0.join("upstream.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Two hops: the public server reaches `upstream` through a second
    /// server on a unix socket, with nginx's default HTTP/1.0 and
    /// `directives`. The inner hop (HTTP/1.1 to the upstream, unbuffered)
    /// answers HTTP/1.0 with a body ended by closing the connection, not
    /// chunked, as many servers do; that is what `proxy_buffering on`
    /// holds back until its buffer fills or the body ends.
    pub fn start_two_hops(upstream: SocketAddr, directives: &str) -> Self {
        Self::launch(|dir, listen| {
            let inner = format!("unix:{}/inner.sock", dir.display());
            let inner_directives = format!("{HTTP11}\n            proxy_buffering off;");
            server(&listen.to_string(), &format!("http://{inner}"), directives)
                + &server(&inner, &format!("http://{upstream}"), &inner_directives)
        })
    }

    fn launch(servers: impl FnOnce(&Path, SocketAddr) -> String) -> Self {
        let bin = nginx_binary();
        let dir = TempDir::new("nginx");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let conf = dir.0.join("nginx.conf");
        std::fs::write(&conf, config(&dir.0, &servers(&dir.0, addr))).expect("nginx.conf");
        let child = Command::new(&bin)
            .arg("-p")
            .arg(&dir.0)
            .arg("-c")
            .arg(&conf)
            .args(["-g", "daemon off;"])
            .env("NGINX", "0;")
            .stdin(Stdio::from(OwnedFd::from(listener)))
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(dir.0.join("stderr.log")).expect("stderr.log"),
            ))
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", bin.display()));
        let mut n = Self {
            dir,
            child: Some(child),
            addr,
        };
        n.wait_ready();
        n
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// nginx's error log so far (for a failing test's message).
    pub fn log(&self) -> String {
        let read = |f: &str| std::fs::read_to_string(self.dir.0.join(f)).unwrap_or_default();
        format!("{}{}", read("stderr.log"), read("error.log"))
    }

    /// The socket accepts from the start; wait until a worker answers.
    fn wait_ready(&mut self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                panic!("nginx exited ({status}):\n{}", self.log());
            }
            if self.log().contains("start worker process") {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("nginx did not start within 10 s:\n{}", self.log());
    }
}

/// What an SSE proxy needs towards its upstream: HTTP/1.1, kept alive.
const HTTP11: &str = "proxy_http_version 1.1;\n            proxy_set_header Connection \"\";";

fn config(dir: &Path, servers: &str) -> String {
    let d = dir.display();
    format!(
        r#"# Written by mcpd-testkit for one test.
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log notice;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
{servers}}}
"#
    )
}

/// One server block proxying everything to `to`, passing the client's Host on.
fn server(listen: &str, to: &str, directives: &str) -> String {
    format!(
        r#"    server {{
        listen {listen};
        location / {{
            proxy_pass {to};
            proxy_set_header Host $http_host;
            {directives}
        }}
    }}
"#
    )
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        // SIGTERM: the master stops its worker, then itself (a SIGKILLed
        // master would leave the worker behind).
        crate::process::signal(c.id(), "-TERM");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}
