//! Real Redis for tests: a `redis-server` on a unix socket in a temp dir
//! (no persistence), or a three-node Redis Cluster on loopback ports. Both
//! are killed on drop. A missing `redis-server` fails the test with the
//! command that installs it.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn redis_server() -> &'static str {
    if Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        panic!("redis-server is not installed: run `apt-get install -y redis-server redis-tools` (scripts/test.sh does this)");
    }
    "redis-server"
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("mcpd-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ping_unix(path: &std::path::Path) -> bool {
    let Ok(mut s) = std::os::unix::net::UnixStream::connect(path) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 7];
    s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

fn ping_tcp(port: u16) -> bool {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 7];
    s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what} did not come up within 10 s");
}

/// One `redis-server` on a unix socket.
pub struct RedisServer {
    dir: TempDir,
    child: Option<Child>,
}

impl RedisServer {
    pub fn start() -> Self {
        let mut r = Self {
            dir: TempDir::new("redis"),
            child: None,
        };
        r.restart();
        r
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.0.join("redis.sock")
    }

    /// The URL mcpd is configured with.
    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.socket().display())
    }

    /// Kills the server (SIGKILL): clients see it vanish.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_file(self.socket());
    }

    /// Starts (again) on the same socket; data is not kept across restarts.
    pub fn restart(&mut self) {
        self.kill();
        let child = Command::new(redis_server())
            .args(["--port", "0", "--unixsocket"])
            .arg(self.socket())
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(&self.dir.0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let sock = self.socket();
        wait_until("redis-server", || ping_unix(&sock));
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A Redis Cluster of three primaries on loopback ports.
pub struct RedisCluster {
    _dir: TempDir,
    children: Vec<Child>,
    pub ports: Vec<u16>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl RedisCluster {
    pub fn start() -> Self {
        let dir = TempDir::new("redis-cluster");
        // Cluster bus ports are port + 10000: keep ports low enough.
        let mut ports = Vec::new();
        while ports.len() < 3 {
            let p = free_port();
            if p < 55000 && !ports.contains(&p) {
                ports.push(p);
            }
        }
        let mut children = Vec::new();
        for p in &ports {
            let child = Command::new(redis_server())
                .args([
                    "--port",
                    &p.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--cluster-enabled",
                    "yes",
                ])
                .args([
                    "--cluster-config-file",
                    &format!("nodes-{p}.conf"),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
                .arg("--dir")
                .arg(&dir.0)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server starts");
            children.push(child);
        }
        for p in &ports {
            wait_until("cluster node", || ping_tcp(*p));
        }
        let nodes: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&nodes)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli runs (apt-get install -y redis-tools)");
        assert!(
            out.status.success(),
            "cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let first = ports[0];
        wait_until("cluster_state:ok", || {
            Command::new("redis-cli")
                .args(["-p", &first.to_string(), "cluster", "info"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains("cluster_state:ok"))
                .unwrap_or(false)
        });
        Self {
            _dir: dir,
            children,
            ports,
        }
    }

    /// Seed nodes, as `store.redis_url` takes them.
    pub fn url(&self) -> String {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
