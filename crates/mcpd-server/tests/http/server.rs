//! [`TestServer`]: the mcpd that `main` runs (`mcpd::serve`), in-process on
//! an ephemeral port. The listener is bound first and handed to the server,
//! so there is no port race; the server runs in its own thread with its own
//! actix system and is stopped on drop.
//!
//! It lives here, not in `mcpd-testkit`, because it needs the `mcpd` crate:
//! the testkit stays below the binary so every crate can use it.

use std::net::{SocketAddr, TcpListener};
use std::thread::JoinHandle;

use mcpd::Config;
use mcpd_testkit::McpClient;

/// A running mcpd, stopped when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    /// The MCP endpoint, e.g. `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    stop: mcpd::StopHandle,
    thread: Option<JoinHandle<()>>,
    /// `http://ADDR` of the admin listener, when `admin.listen` was set.
    pub admin_url: Option<String>,
}

impl TestServer {
    /// mcpd with its defaults (demo tool set).
    pub fn start() -> Self {
        Self::start_with(Config::default())
    }

    /// mcpd with `edit` applied to the default configuration.
    pub fn start_configured(edit: impl FnOnce(&mut Config)) -> Self {
        let mut c = Config::default();
        edit(&mut c);
        Self::start_with(c)
    }

    pub fn start_with(config: Config) -> Self {
        Self::start_serving(config, mcpd::serve)
    }

    /// mcpd started by `serve` (e.g. `|c, l| mcpd::serve_with(c, l, |registry| ...)`
    /// to add test-only tools), with the same port and worker set-up.
    pub fn start_serving<F>(mut config: Config, serve: F) -> Self
    where
        F: FnOnce(&Config, TcpListener) -> std::io::Result<mcpd::Running> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        config.server.listen = addr.to_string();
        if config.server.workers == 0 {
            config.server.workers = 2;
        }
        config.server.shutdown_grace_secs = 1;
        let url = format!("http://{addr}{}", config.http.path);
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            actix_rt::System::new().block_on(async move {
                let running = serve(&config, listener).expect("mcpd starts");
                tx.send((running.stop_handle(), running.admin_addr()))
                    .expect("handle sent");
                let _ = running.run().await;
            });
        });
        let (stop, admin) = rx.recv().expect("mcpd started");
        let admin_url = admin.map(|a| format!("http://{a}"));
        Self {
            addr,
            url,
            stop,
            thread: Some(thread),
            admin_url,
        }
    }

    /// Shuts the server down the way SIGTERM does (graceful), without
    /// waiting: listen streams get their final result, then HTTP stops.
    pub fn shutdown(&self) {
        let _ = self.stop_in_background(true);
    }

    /// Stops the server from a throwaway runtime on its own thread: the
    /// caller may be outside any runtime (drop), and does not wait.
    fn stop_in_background(&self, graceful: bool) -> std::thread::JoinHandle<()> {
        let stop = self.stop.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(stop.stop(graceful));
        })
    }

    /// A client for this server.
    pub fn client(&self) -> McpClient {
        McpClient::new(&self.url)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop_in_background(false).join().ok();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
