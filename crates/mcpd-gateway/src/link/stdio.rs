//! A stdio upstream: the child process mcpd runs, one JSON-RPC message per
//! line each way, its stderr in mcpd's log under the upstream's id, its
//! exit reported as the link going down (the actor then restarts it with
//! backoff). Dropping the link stops the child.
//!
//! The child runs in a process group of its own, and it is the group that
//! is stopped: `command = "npx"` starts `npm exec`, which starts `sh`,
//! which starts `node`, and stopping only the first would leave the others
//! running with no parent. Stopping is SIGTERM to the group, then SIGKILL
//! to what is left after [`GRACE`]; a child that exits by itself has what
//! it left behind in its group killed before it is started again.
//!
//! mcpd killed outright (SIGKILL, the OOM killer) runs none of that, so the
//! child is started by `/bin/sh` with a watcher in its group: it reads the
//! [`lifeline`], a pipe whose write end only this process holds, and when
//! the process is gone (the kernel closes the write end, so the read sees
//! end of file) it kills the whole group. Without `/bin/sh` the child is
//! started directly (stopped as above, but not after a SIGKILL of mcpd).

use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcpd_protocol::jsonrpc::Message;
use rustix::process::{kill_process_group, Pid, Signal};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};

use super::decode::read;
use super::pipe::PipeWire;
use super::report::Reporter;
use crate::config::UpstreamConfig;

/// Lines waiting for the child's stdin; beyond this a message is dropped
/// with a warning rather than queued without limit.
const INPUT_QUEUE: usize = 256;

/// The shell that starts a child with its watcher.
const SHELL: &str = "/bin/sh";

/// The number of the read end of this process's lifeline: a pipe whose
/// write end only this process holds (close-on-exec), so a reader sees end
/// of file once the process is gone, however it ended. The read end is
/// inherited by children. `None`: no `/bin/sh`, or no pipe.
fn lifeline() -> Option<i32> {
    static LIFELINE: OnceLock<Option<(OwnedFd, OwnedFd)>> = OnceLock::new();
    let ends = LIFELINE.get_or_init(|| {
        if !std::path::Path::new(SHELL).exists() {
            tracing::warn!(
                "no {SHELL}: stdio upstreams are not stopped when mcpd is killed outright"
            );
            return None;
        }
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).ok()?;
        // Above the standard descriptors (a process started with one of
        // them closed could otherwise get it, and the watcher's own
        // redirections would replace it).
        let read = rustix::io::fcntl_dupfd_cloexec(&read, 10).ok()?;
        rustix::io::fcntl_setfd(&read, rustix::io::FdFlags::empty()).ok()?;
        Some((read, write))
    });
    ends.as_ref().map(|(read, _)| read.as_raw_fd())
}

/// Whether `command` names a program that exists: a path (a relative
/// one from `cwd`, where the child starts), or a name found in `path` (the
/// upstream's own `PATH`, else mcpd's).
fn findable(command: &str, path: Option<&str>, cwd: Option<&str>) -> bool {
    if command.contains('/') {
        let at = std::path::Path::new(command);
        return match cwd {
            Some(dir) if at.is_relative() => std::path::Path::new(dir).join(at).is_file(),
            _ => at.is_file(),
        };
    }
    let path = path
        .map(str::to_owned)
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(command).is_file())
}

/// The script that runs `"$@"` (the command and its arguments) with a
/// watcher in its process group: the watcher waits for the end of the
/// lifeline `fd`, then kills the group. It keeps none of the command's
/// stdio (the command's end of file must not wait for it). The pipe is
/// opened by its `/proc` name (`sh` redirects only descriptors 0 to 9);
/// without `/proc` the watcher leaves at once and the child runs unwatched.
fn watched(fd: i32) -> String {
    format!(
        "( exec </dev/null >/dev/null 2>&1; [ -r /proc/self/fd/{fd} ] || exit 0; while read -r _; do :; done </proc/self/fd/{fd}; kill -9 0 ) & exec \"$@\""
    )
}

/// How long a stopped child's process group has to exit after SIGTERM.
pub const GRACE: Duration = Duration::from_secs(2);

pub struct StdioLink {
    lines: mpsc::Sender<String>,
    /// Dropping it stops the child (see [`watch`]).
    _kill: oneshot::Sender<()>,
    upstream: Arc<str>,
    /// The child's process group (its pid).
    group: Option<Pid>,
}

impl Drop for StdioLink {
    /// SIGTERM to the group at once (also when the process is exiting and
    /// [`watch`] will not run again); `watch` sends SIGKILL after [`GRACE`].
    fn drop(&mut self) {
        if let Some(g) = self.group {
            let _ = kill_process_group(g, Signal::TERM);
        }
    }
}

impl StdioLink {
    /// Starts the child and the tasks that write its stdin, read its
    /// stdout and stderr, and wait for its exit.
    /// `pipe`: the child speaks 2026-07-28, and its output goes there
    /// rather than to the actor.
    pub fn spawn(
        cfg: &UpstreamConfig,
        reporter: Reporter,
        pipe: Option<Arc<PipeWire>>,
    ) -> Result<Self, String> {
        // Started through the shell, a command that is not there would
        // only show as an exit status: say what is wrong first.
        let path = cfg.env.get("PATH").map(String::as_str);
        if !findable(&cfg.command, path, cfg.cwd.as_deref()) {
            return Err(format!(
                "cannot start {:?}: no such program (as a path, or in PATH)",
                cfg.command
            ));
        }
        let mut cmd = match lifeline() {
            Some(fd) => {
                let mut sh = Command::new(SHELL);
                sh.arg("-c")
                    .arg(watched(fd))
                    .arg("mcpd-upstream")
                    .arg(&cfg.command);
                sh
            }
            None => Command::new(&cfg.command),
        };
        cmd.args(&cfg.args)
            .envs(&cfg.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(dir) = &cfg.cwd {
            cmd.current_dir(dir);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", cfg.command))?;
        let (stdin, stdout, stderr) = (
            child.stdin.take().ok_or("no stdin")?,
            child.stdout.take().ok_or("no stdout")?,
            child.stderr.take().ok_or("no stderr")?,
        );
        let group = child.id().and_then(|id| Pid::from_raw(id as i32));
        let upstream = reporter.upstream.clone();
        let (lines, rx) = mpsc::channel(INPUT_QUEUE);
        let (kill, killed) = oneshot::channel();
        if let Some(p) = &pipe {
            p.attach(lines.clone());
        }
        actix::spawn(write_lines(stdin, rx));
        actix::spawn(read_lines(stdout, reporter.clone(), pipe));
        actix::spawn(log_stderr(stderr, upstream.clone()));
        actix::spawn(watch(child, group, killed, reporter));
        Ok(Self {
            lines,
            _kill: kill,
            upstream,
            group,
        })
    }

    pub fn send(&self, msg: &Message) {
        if let Err(e) = self.lines.try_send(msg.to_json()) {
            tracing::warn!(upstream = %self.upstream, "upstream input full or closed: {e}");
        }
    }
}

/// One JSON-RPC message per line.
async fn write_lines(mut stdin: ChildStdin, mut rx: mpsc::Receiver<String>) {
    while let Some(mut line) = rx.recv().await {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

/// Every line a message; other output is logged, not parsed.
async fn read_lines(stdout: ChildStdout, reporter: Reporter, pipe: Option<Arc<PipeWire>>) {
    let mut out = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = out.next_line().await {
        match (serde_json::from_str::<Value>(&line), &pipe) {
            (Ok(json), Some(p)) => {
                if !p.on_line(json).await {
                    return;
                }
            }
            (Ok(json), None) => {
                let messages = read(&reporter.upstream, json);
                if !messages.is_empty() && !reporter.deliver(messages, None).await {
                    return;
                }
            }
            (Err(_), _) if line.trim().is_empty() => {}
            (Err(_), _) => tracing::warn!(
                upstream = %reporter.upstream,
                "not JSON-RPC on stdout, ignored: {}",
                line.chars().take(200).collect::<String>()
            ),
        }
    }
    if let Some(p) = &pipe {
        p.closed();
    }
}

async fn log_stderr(stderr: ChildStderr, upstream: Arc<str>) {
    let mut err = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = err.next_line().await {
        tracing::info!(target: "mcpd::upstream", upstream = %upstream, "{line}");
    }
}

/// The child's exit goes to the actor as the link going down; a stop (the
/// link dropped: SIGTERM was sent to the group) goes nowhere, since the
/// actor already moved on, and what is left of the group after [`GRACE`]
/// is killed. Either way no process of the group outlives the link.
async fn watch(
    mut child: Child,
    group: Option<Pid>,
    killed: oneshot::Receiver<()>,
    reporter: Reporter,
) {
    let why = tokio::select! {
        status = child.wait() => match status {
            Ok(s) => format!("the process exited ({s})"),
            Err(e) => format!("the process could not be waited for: {e}"),
        },
        _ = killed => {
            let _ = tokio::time::timeout(GRACE, child.wait()).await;
            kill_group(group, &mut child).await;
            return;
        }
    };
    kill_group(group, &mut child).await;
    reporter.down(why);
}

/// SIGKILL to the child's group (what it started, and itself if still
/// there), then its exit collected.
async fn kill_group(group: Option<Pid>, child: &mut Child) {
    if let Some(g) = group {
        let _ = kill_process_group(g, Signal::KILL);
    }
    let _ = child.kill().await;
}

#[cfg(test)]
mod tests {
    use super::findable;

    /// A name is looked for in PATH; a relative path from where the child
    /// starts (`cwd`), not from mcpd's directory.
    #[test]
    fn a_command_is_found_where_the_child_would_run_it() {
        assert!(findable("sh", None, None));
        assert!(!findable("no-such-program-here", None, None));
        assert!(!findable("sh", Some("/nonexistent-dir"), None));
        assert!(findable("./sh", None, Some("/bin")));
        assert!(!findable("./sh", None, Some("/nonexistent-dir")));
        assert!(findable("/bin/sh", None, Some("/nonexistent-dir")));
    }
}
