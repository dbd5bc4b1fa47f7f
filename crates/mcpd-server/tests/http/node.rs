//! The official SDK clients (installed by `tests/interop/run.sh`) run as
//! child processes against servers started by the tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub fn interop_cache() -> PathBuf {
    std::env::var_os("MCPD_INTEROP_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/mcpd-interop-cache"))
}

pub fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop")
}

/// A work directory with the current `tests/interop/*.mjs` beside a
/// `node_modules` link into the installed cache (the cache is not written).
pub fn interop_workdir() -> mcpd_testkit::redis::TempDir {
    let cache = interop_cache();
    let modules = cache.join("node/node_modules");
    for pkg in ["@modelcontextprotocol/sdk", "@modelcontextprotocol/client"] {
        assert!(
            modules.join(pkg).join("package.json").is_file(),
            "the interop SDKs are not installed in {} ({pkg} missing): run `tests/interop/run.sh <url>` once first (it installs them there; set MCPD_INTEROP_CACHE for another place)",
            cache.display()
        );
    }
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.as_ref().is_ok_and(|o| o.status.success()),
        "node is not on PATH (needed for the interop clients): {node:?}"
    );
    let dir = mcpd_testkit::redis::TempDir::new("interop-rr");
    std::os::unix::fs::symlink(&modules, dir.0.join("node_modules")).expect("symlink node_modules");
    for e in std::fs::read_dir(interop_dir()).expect("tests/interop") {
        let p = e.expect("dir entry").path();
        if p.extension().is_some_and(|x| x == "mjs") {
            std::fs::copy(&p, dir.0.join(p.file_name().unwrap())).expect("copy .mjs");
        }
    }
    dir
}

/// Runs `node args…` in `dir` (120 s at most); its exit status and stdout.
pub async fn run_node(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    let out_path = dir.join(format!("out-{}.txt", args.len()));
    let err_path = dir.join(format!("err-{}.txt", args.len()));
    let mut child = Command::new("node")
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("node starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    (
        status,
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default(),
    )
}
