//! The process before it serves (#37, item 3): the stores are reached
//! before the port is bound, `MCPD_*` variables that name no key are
//! warned about, and `--check-config` says what it checked and what not.

use std::collections::HashSet;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mcpd_testkit::redis::{RedisServer, TempDir};
use mcpd_testkit::McpdProcess;

const BIN: &str = env!("CARGO_BIN_EXE_mcpd");

/// The inodes of the sockets listening on TCP (IPv4 and IPv6) now.
fn listening_inodes() -> HashSet<String> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| {
            t.lines()
                .skip(1)
                .filter_map(|l| {
                    let cols: Vec<&str> = l.split_whitespace().collect();
                    // st 0A = LISTEN; the inode is the tenth column.
                    (cols.get(3) == Some(&"0A")).then(|| cols.get(9).map(|s| s.to_string()))?
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether process `pid` holds a listening TCP socket.
fn listens(pid: u32) -> bool {
    let listening = listening_inodes();
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(Result::ok)
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .any(|inode| listening.contains(&inode))
}

/// With a Redis that does not answer (stopped with SIGSTOP), mcpd exits
/// with the store's error and never binds its port in the meantime: no
/// client (or load balancer) can connect to a process about to die.
#[test]
fn with_a_redis_that_does_not_answer_the_port_is_never_bound() {
    let redis = RedisServer::start();
    redis.pause();
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--store", "redis"])
        .args(["--redis-url", &redis.url()])
        .env("MCPD_LOG_LEVEL", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpd starts");
    let pid = child.id();
    let mut polls = 0;
    let status = loop {
        assert!(
            !listens(pid),
            "mcpd bound its port before its store answered"
        );
        polls += 1;
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "mcpd never exited"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    redis.unpause();
    let out = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("cannot reach the Redis store"), "{stderr}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("listening"),
        "{stderr}"
    );
    assert!(
        polls > 10,
        "watched while it waited for Redis ({polls} polls)"
    );
}

/// The check above can see a bound port: a healthy mcpd listens.
#[test]
fn a_started_mcpd_is_seen_listening() {
    let p = McpdProcess::start(BIN, &[]);
    assert!(listens(p.pid().expect("running")));
}

fn check_config(args: &[&str], env: &[(&str, &str)]) -> (Output, String, String) {
    let out = Command::new(BIN)
        .arg("--check-config")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("mcpd runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

/// A misspelt `MCPD_*` variable is warned about with the nearest key,
/// by `--check-config` and by a running server; a real one is not.
#[test]
fn a_misspelt_environment_variable_is_warned_about_with_the_nearest_key() {
    let env = [
        ("MCPD_SERVR_LISTEN", "5"),
        ("MCPD_LIMITS_MAX_SESSIONS", "9"),
    ];
    let (out, _, stderr) = check_config(&[], &env);
    assert!(out.status.success(), "{stderr}");
    let want = "MCPD_SERVR_LISTEN names no configuration key and is ignored; did you mean MCPD_SERVER_LISTEN?";
    assert!(stderr.contains(want), "{stderr}");
    assert!(!stderr.contains("MCPD_LIMITS_MAX_SESSIONS"), "{stderr}");

    let dir = TempDir::new("envwarn");
    let log = dir.0.join("mcpd.log");
    let _p = McpdProcess::start_with(BIN, &[], &env, Some(&log));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains(want), "{text}");
}

/// `--check-config` names what it checked and what it did not; a missing
/// upstream command and (with `--check-connections`) a Redis or upstream
/// that does not answer fail it, naming each; `toolset none` as written.
#[test]
fn check_config_says_what_it_checked_and_what_not() {
    let redis = RedisServer::start();
    let dir = TempDir::new("checkcfg");
    let file = dir.0.join("mcpd.toml");
    let write = |command: &str, redis_url: &str| {
        let toml = format!(
            "[server]\ntoolset = \"none\"\n[store]\nbackend = \"redis\"\nredis_url = \"{redis_url}\"\n\
             [[upstream]]\nid = \"local\"\ncommand = \"{command}\"\n\
             [[upstream]]\nid = \"remote\"\nurl = \"http://127.0.0.1:9/mcp\"\n"
        );
        std::fs::write(&file, toml).expect("config written");
    };
    let path = file.to_str().expect("utf-8 path");

    write("sh", &redis.url());
    let (out, stdout, stderr) = check_config(&["--config", path], &[]);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("toolset none, store redis"), "{stdout}");
    assert!(
        stdout.contains("checked: upstream 'local': command `sh` is /"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "not checked: that Redis at {} answers (add --check-connections)",
            redis.url()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "not checked: that upstream 'remote' at http://127.0.0.1:9/mcp accepts connections"
        ),
        "{stdout}"
    );

    write("no-such-command-mcpd", &redis.url());
    let (out, _, stderr) = check_config(&["--config", path], &[]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "upstream 'local': command `no-such-command-mcpd` is not an executable file on PATH"
        ),
        "{stderr}"
    );

    // With --check-connections: the real Redis answers, port 9 does not.
    write("sh", &redis.url());
    let (out, stdout, stderr) = check_config(&["--config", path, "--check-connections"], &[]);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("upstream 'remote' at http://127.0.0.1:9/mcp: cannot connect"),
        "{stderr}"
    );
    assert!(!stderr.contains("Redis"), "Redis answered: {stderr}");

    write("sh", "redis://127.0.0.1:9");
    let (out, _, stderr) = check_config(&["--config", path, "--check-connections"], &[]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("Redis at redis://127.0.0.1:9 does not answer"),
        "{stderr}"
    );

    // Nothing to connect to: every check passes and is named.
    let (out, stdout, stderr) = check_config(&["--check-connections", "--toolset", "none"], &[]);
    assert!(out.status.success(), "{stderr}");
    assert!(!stdout.contains("not checked"), "{stdout}");
}
