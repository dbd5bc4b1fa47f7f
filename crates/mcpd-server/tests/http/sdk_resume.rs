//! The official Python SDK client (PyPI `mcp` 2.3.0, from the interop venv)
//! resuming across an mcpd restart: this test orchestrates
//! `tests/interop/resume.py` (see its docstring for the protocol).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mcpd_testkit::{McpdProcess, RedisServer};

/// The interop venv's python with `mcp` installed; fails (never skips) when
/// it is missing.
pub(crate) fn interop_python() -> PathBuf {
    let cache =
        std::env::var("MCPD_INTEROP_CACHE").unwrap_or_else(|_| "/tmp/mcpd-interop-cache".into());
    let python = PathBuf::from(&cache).join("venv/bin/python");
    let usable = python.exists()
        && Command::new(&python)
            .args([
                "-c",
                "import mcp.client.streamable_http, mcp.shared.message",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    assert!(
        usable,
        "the Python interop venv is missing or incomplete ({}): run tests/interop/run.sh URL \
         or scripts/test.sh first; they install the pinned PyPI mcp there (MCPD_INTEROP_CACHE \
         sets the cache directory)",
        python.display()
    );
    python
}

/// A child killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Issue: "The official Python SDK client's resumption (resumption token
/// support in PyPI mcp) against a restarted mcpd." The script calls a slow
/// tool with progress and a resumption-token callback; after two progress
/// notifications it prints `READY <token>`; about 0.7 s (two more progress
/// steps) later mcpd is SIGKILLed and started again on the same port and
/// Redis; the SDK's own reconnection and an
/// explicit resumption with the token both get the remaining events and
/// mcpd's error for the lost request, and the session goes on.
#[test]
fn python_sdk_resumes_across_an_mcpd_restart() {
    let python = interop_python();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/resume.py");
    let redis = RedisServer::start();
    let url = redis.url();
    let mut mcpd = McpdProcess::start(
        env!("CARGO_BIN_EXE_mcpd"),
        &["--store", "redis", "--redis-url", &url],
    );

    let mut child = Killed(
        Command::new(&python)
            .arg(&script)
            .arg(&mcpd.url)
            .current_dir(std::env::temp_dir())
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python starts"),
    );
    let stdout = child.0.stdout.take().unwrap();
    let stderr = child.0.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut s);
        s
    });

    let deadline = Instant::now() + Duration::from_secs(90);
    let mut lines = Vec::new();
    let mut restarted = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(token) = line.strip_prefix("READY ") {
                    assert!(!restarted, "READY twice: {lines:?}");
                    assert!(!token.trim().is_empty(), "{line}");
                    // A few more events after the token (300 ms apart), then the kill.
                    std::thread::sleep(Duration::from_millis(700));
                    mcpd.kill();
                    mcpd.restart();
                    restarted = true;
                    let stdin = child.0.stdin.as_mut().expect("stdin");
                    stdin.write_all(b"RESTARTED\n").expect("told the script");
                    stdin.flush().expect("flushed");
                }
                lines.push(line);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                drop(child);
                panic!("resume.py did not finish within 90 s; output so far: {lines:#?}");
            }
        }
    }
    let status = child.0.wait().expect("python exits");
    let stderr = err_thread.join().unwrap_or_default();
    let report = format!("{lines:#?}\nstderr (tail): {}", tail(&stderr, 2000));
    eprintln!("{}", lines.join("\n"));
    assert!(restarted, "the script never printed READY: {report}");
    let fails: Vec<&String> = lines.iter().filter(|l| l.starts_with("FAIL ")).collect();
    assert!(fails.is_empty(), "{fails:#?}\n{report}");
    for check in [
        "initialize",
        "interrupted_call",
        "resume_with_token",
        "session_after_restart",
        "delete_session",
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("PASS resume:{check}"))),
            "no PASS for {check}: {report}"
        );
    }
    assert!(status.success(), "resume.py exited with {status}: {report}");
}

fn tail(s: &str, n: usize) -> &str {
    let start = s.len().saturating_sub(n);
    let start = (start..s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    &s[start..]
}
