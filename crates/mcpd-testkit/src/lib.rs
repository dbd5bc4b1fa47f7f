//! Test harness shared by mcpd's tests (`publish = false`).
//!
//! It depends on no mcpd crate, so any crate's tests can use it. mcpd itself
//! is started as a child process from its binary ([`process`], [`cluster`]);
//! the in-process server of the binary's tests is in `crates/mcpd-server/tests`.
//!
//! - [`McpClient`]: a small Streamable HTTP client that speaks raw HTTP, so
//!   tests can assert status codes, headers and SSE framing exactly.
//! - [`sse`]: an incremental SSE parser over a response body.
//! - [`redis`]: a real `redis-server` (unix socket) or Redis Cluster, killed on drop.
//! - [`process`]: mcpd as a child process, for SIGKILL-and-restart tests.
//! - [`nginx`]: a real nginx in front of a server, with a test's directives.
//! - [`cluster`]: several mcpd processes on one Redis behind a round-robin
//!   proxy (every request of a session on the next replica).

pub mod client;
pub mod cluster;
pub mod nginx;
pub mod process;
pub mod redis;
pub mod sse;
pub mod stub;

pub use client::{McpClient, Reply, INIT_VERSION};
pub use cluster::{RoundRobinProxy, TestCluster};
pub use nginx::Nginx;
pub use process::McpdProcess;
pub use redis::{RedisCluster, RedisSentinel, RedisServer, SENTINEL_SERVICE};
pub use sse::{SseEvent, SseStream};
pub use stub::{StubRequest, StubResponse, StubServer};
