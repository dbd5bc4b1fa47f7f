//! Redis backends: the event log on Redis Streams and the session directory
//! on plain keys, shared by every replica and surviving restarts.
//!
//! Key layout (prefix configurable, default `mcpd:`), all keys of a session
//! under one hash tag `{<session>}` so they share a Redis Cluster slot:
//!
//! | key | type | what |
//! | --- | --- | --- |
//! | `<prefix>{<session>}:s` | string | the session record (JSON), TTL = idle timeout, refreshed on use |
//! | `<prefix>{<session>}:e:<stream>` | stream | one SSE stream's events, ids `0-<seq>`, field `d`; `MAXLEN ~`, TTL = stream max age, refreshed on append |
//! | `<prefix>{<session>}:streams` | set | the session's stream ids, for cleanup |
//!
//! Every call is bounded by a timeout: a Redis that is away makes calls fail
//! with [`StoreError::Unavailable`](crate::StoreError::Unavailable) quickly,
//! never hang; the connection is re-established by itself when Redis
//! returns.
//!
//! Layout: `config` the configuration; `store` the store, its key names,
//! the bound on every call and what in Redis's own configuration hurts a
//! deployment; `connection` reaches Redis (single node, sentinel or
//! cluster); `event_log` and `directory` implement
//! [`EventLog`](crate::EventLog) and
//! [`SessionDirectory`](crate::SessionDirectory); `bus` is the control bus
//! and stream ownership; `keys` the MRTR key ring shared by replicas;
//! `once` keys claimed once (DPoP proof ids); `quota` the buckets of named
//! limits; `tasks` the task records (the
//! Tasks extension). This file only declares them and re-exports: the
//! backends import `store` and `connection`, never this file.

mod bus;
mod config;
mod connection;
mod directory;
mod event_log;
mod keys;
mod once;
mod quota;
mod store;
mod tasks;

pub use bus::RedisBus;
pub use config::RedisConfig;
pub use store::RedisStore;
