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

/// A hang guard, not a timing check: a three-node Redis Cluster started
/// beside a busy test run can take several seconds on two cores.
fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what} did not come up within 30 s");
}

/// One `redis-server` on a unix socket.
pub struct RedisServer {
    dir: TempDir,
    child: Option<Child>,
    /// Append-only file on, fsync'd at every write: data survives a kill
    /// and a restart.
    persistent: bool,
}

impl RedisServer {
    pub fn start() -> Self {
        Self::launch(false)
    }

    /// A server whose data survives restarts and kills (AOF, `appendfsync
    /// always`), as a production Redis with persistence.
    pub fn start_persistent() -> Self {
        Self::launch(true)
    }

    fn launch(persistent: bool) -> Self {
        let mut r = Self {
            dir: TempDir::new("redis"),
            child: None,
            persistent,
        };
        r.restart();
        r
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Thaws a paused server (SIGCONT).
    pub fn unpause(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, sig: &str) {
        if let Some(c) = &self.child {
            crate::process::signal(c.id(), sig);
        }
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

    /// Starts (again) on the same socket; data is kept across restarts only
    /// by a [`Self::start_persistent`] server.
    pub fn restart(&mut self) {
        self.kill();
        let aof: &[&str] = match self.persistent {
            true => &["--appendonly", "yes", "--appendfsync", "always"],
            false => &["--appendonly", "no"],
        };
        let child = Command::new(redis_server())
            .args(["--port", "0", "--unixsocket"])
            .arg(self.socket())
            .args(["--save", ""])
            .args(aof)
            .arg("--dir")
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

fn port_is_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

impl RedisCluster {
    pub fn start() -> Self {
        let dir = TempDir::new("redis-cluster");
        // Cluster bus ports are port + 10000: keep ports low enough, and
        // take a port only when its bus port is free too.
        let mut ports = Vec::new();
        while ports.len() < 3 {
            let p = free_port();
            if p < 55000 && !ports.contains(&p) && port_is_free(p + 10000) {
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
        // Every node, not just the first, must see all slots served: a
        // node that has not heard yet answers CLUSTERDOWN.
        for p in &ports {
            wait_until("cluster_state:ok on every node", || {
                Command::new("redis-cli")
                    .args(["-p", &p.to_string(), "cluster", "info"])
                    .output()
                    .map(|o| {
                        let info = String::from_utf8_lossy(&o.stdout);
                        info.contains("cluster_state:ok")
                            && info.contains("cluster_slots_ok:16384")
                            && info.contains("cluster_known_nodes:3")
                    })
                    .unwrap_or(false)
            });
        }
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

/// A primary, one replica and one Sentinel watching them (quorum 1, down
/// after 1 s), for failover tests.
pub struct RedisSentinel {
    dir: TempDir,
    primary: Option<Child>,
    replica: Child,
    sentinel: Child,
    pub primary_port: u16,
    pub replica_port: u16,
    pub sentinel_port: u16,
}

/// The Sentinel service name the guard configures.
pub const SENTINEL_SERVICE: &str = "mymaster";

fn info(port: u16, section: &str) -> String {
    Command::new("redis-cli")
        .args(["-p", &port.to_string(), "info", section])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

impl RedisSentinel {
    pub fn start() -> Self {
        let dir = TempDir::new("redis-sentinel");
        let (pp, rp, sp) = (free_port(), free_port(), free_port());
        let spawn = |args: Vec<String>| {
            Command::new(redis_server())
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server starts")
        };
        let base = |p: u16| {
            vec![
                "--port".into(),
                p.to_string(),
                "--bind".into(),
                "127.0.0.1".into(),
                "--save".into(),
                String::new(),
                "--appendonly".into(),
                "no".into(),
                "--dir".into(),
                dir.0.display().to_string(),
            ]
        };
        let primary = spawn(base(pp));
        wait_until("primary", || ping_tcp(pp));
        let mut r = base(rp);
        r.extend(["--replicaof".into(), "127.0.0.1".into(), pp.to_string()]);
        let replica = spawn(r);
        wait_until("replica link", || {
            info(rp, "replication").contains("master_link_status:up")
        });
        let conf = dir.0.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {sp}\nbind 127.0.0.1\nsentinel monitor {SENTINEL_SERVICE} 127.0.0.1 {pp} 1\n\
                 sentinel down-after-milliseconds {SENTINEL_SERVICE} 1000\nsentinel failover-timeout {SENTINEL_SERVICE} 5000\n"
            ),
        )
        .expect("sentinel config");
        let sentinel = Command::new(redis_server())
            .arg(&conf)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sentinel starts");
        wait_until("sentinel sees the replica", || {
            Command::new("redis-cli")
                .args([
                    "-p",
                    &sp.to_string(),
                    "sentinel",
                    "replicas",
                    SENTINEL_SERVICE,
                ])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains(&rp.to_string()))
                .unwrap_or(false)
        });
        Self {
            dir,
            primary: Some(primary),
            replica,
            sentinel,
            primary_port: pp,
            replica_port: rp,
            sentinel_port: sp,
        }
    }

    /// The URL mcpd is given (the Sentinel, not the primary).
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.sentinel_port)
    }

    /// Kills the primary and waits until the Sentinel has promoted the replica.
    pub fn fail_over(&mut self) {
        if let Some(mut p) = self.primary.take() {
            let _ = p.kill();
            let _ = p.wait();
        }
        let (sp, rp) = (self.sentinel_port, self.replica_port);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let out = Command::new("redis-cli")
                .args([
                    "-p",
                    &sp.to_string(),
                    "sentinel",
                    "get-master-addr-by-name",
                    SENTINEL_SERVICE,
                ])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            if out.lines().last() == Some(&rp.to_string())
                && info(rp, "replication").contains("role:master")
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the Sentinel did not promote the replica within 30 s");
    }

    pub fn dir(&self) -> &std::path::Path {
        &self.dir.0
    }
}

impl Drop for RedisSentinel {
    fn drop(&mut self) {
        for c in [
            self.primary.as_mut(),
            Some(&mut self.replica),
            Some(&mut self.sentinel),
        ]
        .into_iter()
        .flatten()
        {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
