//! mcpd as a separate process, for tests that must kill it (SIGKILL) and
//! start it again on the same address.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct McpdProcess {
    bin: String,
    args: Vec<String>,
    /// Extra environment (applied after the default `MCPD_LOG_LEVEL=warn`).
    env: Vec<(String, String)>,
    /// Where stderr is appended (inherited when `None`).
    log: Option<PathBuf>,
    child: Option<Child>,
    /// The MCP endpoint URL.
    pub url: String,
    pub port: u16,
}

impl McpdProcess {
    /// Starts `bin` (e.g. `env!("CARGO_BIN_EXE_mcpd")`) with `args` on an
    /// ephemeral port and waits for its `mcpd listening on URL` line.
    pub fn start(bin: &str, args: &[&str]) -> Self {
        Self::start_with(bin, args, &[], None)
    }

    /// Like [`Self::start`], with extra environment variables (e.g.
    /// `MCPD_LOG_LEVEL=info`) and stderr appended to `log` (kept across
    /// restarts, each start marked by a `--- mcpd start` line).
    pub fn start_with(bin: &str, args: &[&str], env: &[(&str, &str)], log: Option<&Path>) -> Self {
        let mut p = Self {
            bin: bin.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            log: log.map(Path::to_path_buf),
            child: None,
            url: String::new(),
            port: 0,
        };
        p.spawn("127.0.0.1:0");
        p
    }

    fn spawn(&mut self, listen: &str) {
        let stderr = match &self.log {
            Some(path) => {
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .expect("mcpd log file");
                let _ = writeln!(
                    f,
                    "--- mcpd start: {} {:?} --listen {listen}",
                    self.bin, self.args
                );
                Stdio::from(f)
            }
            None => Stdio::inherit(),
        };
        let mut child = Command::new(&self.bin)
            .args(&self.args)
            .args(["--listen", listen])
            .env("MCPD_LOG_LEVEL", "warn")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("mcpd starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("mcpd listening on ") {
                    let _ = tx.send(url.to_owned());
                }
            }
        });
        let url = match rx.recv_timeout(Duration::from_secs(15)) {
            Ok(u) => u,
            Err(_) => {
                let _ = child.kill();
                panic!("mcpd did not start ({} {:?})", self.bin, self.args);
            }
        };
        self.port = url
            .rsplit_once(':')
            .and_then(|(_, r)| r.split('/').next())
            .and_then(|p| p.parse().ok())
            .expect("port in URL");
        self.url = url;
        self.child = Some(child);
    }

    /// The child's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL: no graceful anything, as when a pod is lost.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// A new process on the same port (the client keeps its URL).
    pub fn restart(&mut self) {
        self.kill();
        let listen = format!("127.0.0.1:{}", self.port);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // The port is free again as soon as the old process is reaped.
            if std::net::TcpListener::bind(&listen).is_ok() || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.spawn(&listen);
    }
}

impl Drop for McpdProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends `sig` (`-TERM`, `-STOP`, …) to process `pid`, as `kill` does.
pub(crate) fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
}
