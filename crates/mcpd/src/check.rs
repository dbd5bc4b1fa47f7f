//! `mcpd --check-config`: what a configuration is checked for without
//! starting the server, and what it is not. Keys and values are checked by
//! loading ([`Config::load`]); here, what lies outside the file: that each
//! stdio upstream's command exists (instant), and, with
//! `--check-connections` (it may wait for time-outs), that the Redis store
//! and each remote upstream answer. The report names each check done and
//! each one left undone, so "valid" never claims more than was checked.

use crate::config::{Config, ConfigError};
use crate::StoreBackend;

/// What one check found.
enum Found {
    Checked(String),
    NotChecked(String),
    // Only the Redis and upstream checks can fail.
    #[cfg_attr(not(any(feature = "redis", feature = "gateway")), allow(dead_code))]
    Failed(String),
}

/// Checks `config` beyond its keys and prints the report on stdout (one
/// `checked:` / `not checked:` line each). An `Err` names every failure.
pub(crate) fn report(config: &Config, connections: bool) -> Result<(), ConfigError> {
    let mut found = vec![Found::Checked(
        "every key of the file, the MCPD_* environment and the flags, and its value".into(),
    )];
    found.extend(upstreams::commands(config));
    if connections {
        found.extend(check_connections(config));
    } else {
        if config.store.backend == StoreBackend::Redis {
            found.push(Found::NotChecked(format!(
                "that Redis at {} answers (add --check-connections)",
                config.store.redis_url
            )));
        }
        found.extend(upstreams::not_checked(config));
    }
    let failures: Vec<&str> = found
        .iter()
        .filter_map(|f| match f {
            Found::Failed(why) => Some(why.as_str()),
            _ => None,
        })
        .collect();
    for warning in &config.warnings {
        eprintln!("mcpd: warning: {warning}");
    }
    if !failures.is_empty() {
        return Err(ConfigError(failures.join("; ")));
    }
    println!(
        "mcpd: configuration is valid (listen {}, path {}, toolset {}, store {})",
        config.server.listen,
        config.http.path,
        config.server.toolset.name(),
        config.store.backend.name()
    );
    for f in &found {
        match f {
            Found::Checked(what) => println!("checked: {what}"),
            Found::NotChecked(what) => println!("not checked: {what}"),
            Found::Failed(_) => {}
        }
    }
    Ok(())
}

/// `--check-connections`: Redis answers `PING`, each remote upstream's
/// host accepts a TCP connection (no MCP handshake: that needs its
/// credentials and may start work there).
fn check_connections(config: &Config) -> Vec<Found> {
    let system = actix_rt::System::new();
    let mut found = Vec::new();
    found.extend(redis_answers(config, &system));
    found.extend(upstreams::connections(config, &system));
    found
}

/// Whether the Redis store answers `PING`, when configured.
#[cfg(feature = "redis")]
fn redis_answers(config: &Config, system: &actix_rt::SystemRunner) -> Option<Found> {
    use mcpd_store::EventLog;
    if config.store.backend != StoreBackend::Redis {
        return None;
    }
    let url = &config.store.redis_url;
    let ttl = std::time::Duration::from_secs(config.limits.session_idle_timeout_secs);
    let answer = system.block_on(async {
        let store = mcpd_store::RedisStore::new(config.store.redis(ttl), "check".into())?;
        store.check().await
    });
    Some(match answer {
        Ok(()) => Found::Checked(format!("Redis at {url} answers")),
        Err(e) => Found::Failed(format!("Redis at {url} does not answer: {e}")),
    })
}

/// Without the `redis` feature, loading refused a Redis store.
#[cfg(not(feature = "redis"))]
fn redis_answers(_: &Config, _: &actix_rt::SystemRunner) -> Option<Found> {
    None
}

/// The upstreams' checks (the `gateway` feature).
#[cfg(feature = "gateway")]
mod upstreams {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use super::Found;
    use crate::config::Config;

    /// Each stdio upstream's command is an executable file.
    pub(super) fn commands(config: &Config) -> Vec<Found> {
        let mut found = Vec::new();
        for u in config.upstream.iter().filter(|u| !u.command.is_empty()) {
            found.push(
                match resolve_command(&u.command, u.cwd.as_deref(), u.env.get("PATH")) {
                    Some(path) => Found::Checked(format!(
                        "upstream '{}': command `{}` is {}",
                        u.id,
                        u.command,
                        path.display()
                    )),
                    None => Found::Failed(format!(
                        "upstream '{}': command `{}` is not an executable file{}",
                        u.id,
                        u.command,
                        if u.command.contains('/') {
                            ""
                        } else {
                            " on PATH"
                        }
                    )),
                },
            );
        }
        found
    }

    /// What `--check-connections` would check of the remote upstreams.
    pub(super) fn not_checked(config: &Config) -> Vec<Found> {
        let mut found = Vec::new();
        for u in config.upstream.iter().filter(|u| !u.url.is_empty()) {
            found.push(Found::NotChecked(format!(
                "that upstream '{}' at {} accepts connections (add --check-connections)",
                u.id, u.url
            )));
        }
        found
    }

    /// Each remote upstream's host accepts a TCP connection.
    pub(super) fn connections(config: &Config, system: &actix_rt::SystemRunner) -> Vec<Found> {
        let mut found = Vec::new();
        for u in config.upstream.iter().filter(|u| !u.url.is_empty()) {
            let timeout = Duration::from_secs(u.connect_timeout_secs.max(1));
            found.push(match system.block_on(connect(&u.url, timeout)) {
                Ok(addr) => Found::Checked(format!(
                    "upstream '{}' at {} accepts connections ({addr})",
                    u.id, u.url
                )),
                Err(why) => Found::Failed(format!("upstream '{}' at {}: {why}", u.id, u.url)),
            });
        }
        found
    }

    /// The file `command` runs, as the gateway starts it: a path (relative to
    /// `cwd`) when it has a `/`, else the first executable on `path` (the
    /// upstream's own `PATH`, else mcpd's).
    fn resolve_command(command: &str, cwd: Option<&str>, path: Option<&String>) -> Option<PathBuf> {
        if command.contains('/') {
            let p = Path::new(command);
            let p = match cwd {
                Some(dir) if p.is_relative() => Path::new(dir).join(p),
                _ => p.to_path_buf(),
            };
            return is_executable(&p).then_some(p);
        }
        let path = path.cloned().or_else(|| std::env::var("PATH").ok())?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(command))
            .find(|p| is_executable(p))
    }

    fn is_executable(p: &Path) -> bool {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }

    /// Opens (and closes) a TCP connection to `url`'s host and port.
    async fn connect(url: &str, timeout: Duration) -> Result<std::net::SocketAddr, String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
        let host = parsed.host_str().ok_or("the URL has no host")?;
        let port = parsed
            .port_or_known_default()
            .ok_or("the URL has no port")?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match tokio::time::timeout(timeout, actix_rt::net::TcpStream::connect((host, port))).await {
            Ok(Ok(stream)) => stream.peer_addr().map_err(|e| e.to_string()),
            Ok(Err(e)) => Err(format!("cannot connect: {e}")),
            Err(_) => Err(format!("no connection within {} s", timeout.as_secs())),
        }
    }
}

/// Without the `gateway` feature, loading refused any upstream.
#[cfg(not(feature = "gateway"))]
mod upstreams {
    use super::Found;
    use crate::config::Config;

    pub(super) fn commands(_: &Config) -> Vec<Found> {
        Vec::new()
    }

    pub(super) fn not_checked(_: &Config) -> Vec<Found> {
        Vec::new()
    }

    pub(super) fn connections(_: &Config, _: &actix_rt::SystemRunner) -> Vec<Found> {
        Vec::new()
    }
}
