//! A session's start and the server's end, in one place for every
//! transport (POST, HTTP+SSE, stdio): `initialize` (negotiation, the
//! session cap, the directory record) with one error mapping, readiness,
//! and shutdown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mcpd_protocol::types::{parse_params_owned, InitializeParams, InitializeResult, JsonObject};
use mcpd_protocol::{ErrorCode, ErrorObject, ProtocolVersion};
use mcpd_store::{EventLog, SessionDirectory, StoreError};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::caller::Caller;
use crate::cluster::Cluster;
use crate::dispatch::McpServer;
use crate::session::SessionRecord;
use crate::sessions::{SessionHandle, SessionTable};

/// Why `initialize` did not create a session.
#[derive(Debug, thiserror::Error)]
pub enum InitializeError {
    /// Malformed params: a JSON-RPC error response.
    #[error("{0}")]
    InvalidParams(ErrorObject),
    /// The session cap is reached.
    #[error("Too many sessions (limit {0}); retry later")]
    TooManySessions(usize),
    /// The session directory could not record the session.
    #[error("the session store is unavailable ({0}); retry shortly")]
    Store(StoreError),
    /// A pass-through server's upstream could not be reached: a JSON-RPC
    /// error answer.
    #[error("{0}")]
    Upstream(ErrorObject),
    /// This process is shutting down; another replica can take the session.
    #[error("This server is shutting down; retry (another replica will answer)")]
    ShuttingDown,
}

impl InitializeError {
    /// Whether the server cannot take a session now (HTTP 503) rather than
    /// refusing this request (a JSON-RPC error answer).
    pub fn is_unavailable(&self) -> bool {
        !matches!(self, Self::InvalidParams(_) | Self::Upstream(_))
    }

    /// The JSON-RPC error that answers the `initialize` request, for
    /// transports that answer in JSON-RPC only (stdio, HTTP+SSE).
    pub fn to_error(&self) -> ErrorObject {
        match self {
            Self::InvalidParams(e) | Self::Upstream(e) => e.clone(),
            other => ErrorObject::new(ErrorCode::OVERLOADED, other.to_string()),
        }
    }
}

pub struct Lifecycle {
    server: Arc<McpServer>,
    sessions: Arc<SessionTable>,
    log: Arc<dyn EventLog>,
    directory: Arc<dyn SessionDirectory>,
    cluster: Arc<dyn Cluster>,
    /// Set on SIGTERM: readiness fails and new sessions are refused.
    shutting_down: AtomicBool,
}

impl Lifecycle {
    pub fn new(
        server: Arc<McpServer>,
        sessions: Arc<SessionTable>,
        log: Arc<dyn EventLog>,
        directory: Arc<dyn SessionDirectory>,
        cluster: Arc<dyn Cluster>,
    ) -> Self {
        Self {
            server,
            sessions,
            log,
            directory,
            cluster,
            shutting_down: AtomicBool::new(false),
        }
    }

    /// Handles `initialize`: negotiates the revision, records the session in
    /// the directory, and starts its actor on the current arbiter.
    pub async fn initialize(
        &self,
        params: Option<JsonObject>,
        caller: &Caller,
    ) -> Result<(SessionHandle, Box<RawValue>), InitializeError> {
        let p: InitializeParams =
            parse_params_owned(params).map_err(InitializeError::InvalidParams)?;
        if self.is_shutting_down() {
            return Err(InitializeError::ShuttingDown);
        }
        let limit = self.server.limits.max_sessions;
        if self.sessions.len() >= limit {
            return Err(InitializeError::TooManySessions(limit));
        }
        let version = ProtocolVersion::negotiate(&p.protocol_version);
        let id: Arc<str> = Arc::from(uuid::Uuid::new_v4().simple().to_string());
        // A pass-through server answers with its upstream's identity.
        let upstream = match &self.server.forward_all {
            Some(f) => Some(
                f.handshake(Some(&id))
                    .await
                    .map_err(InitializeError::Upstream)?,
            ),
            None => None,
        };
        let mut record = SessionRecord::new(version, p.capabilities, p.client_info);
        record.owner = caller.principal.as_deref().map(str::to_owned);
        self.directory
            .put(&id, record.to_bytes())
            .await
            .map_err(InitializeError::Store)?;
        self.cluster
            .register_holder(&id)
            .await
            .map_err(InitializeError::Store)?;
        // Debug, not info: at thousands of sessions a second a line each
        // would cost more than the session (`mcpd_sessions_created_total`
        // counts them).
        tracing::debug!(session = %id, version = %version, client = %record.client_info.name, "session created");
        let handle = self.sessions.start_actor(id, record);
        self.server.metrics.sessions_created.inc();
        let result = InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities: self.server.capabilities(),
            server_info: self.server.info.clone().for_version(version),
            instructions: self.server.instructions.clone(),
        };
        let Some(up) = upstream else {
            // Serialised once, straight to its bytes.
            return Ok((handle, to_raw(&result)));
        };
        let mut result = serde_json::to_value(result).unwrap_or(Value::Null);
        if let Value::Object(r) = &mut result {
            for key in ["capabilities", "serverInfo", "instructions"] {
                match up.get(key) {
                    Some(v) => r.insert(key.into(), v.clone()),
                    None => r.remove(key),
                };
            }
        }
        Ok((handle, to_raw(&result)))
    }

    /// Starts shutting down: readiness fails from now on and `initialize`
    /// is refused, so load balancers send new sessions elsewhere.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
        self.server.metrics.ready.set(0);
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// The stores answer (keeps `mcpd_store_up` current).
    pub async fn check_stores(&self) -> Result<(), StoreError> {
        let result = self.log.check().await;
        self.server.metrics.store_up.set(i64::from(result.is_ok()));
        result
    }

    /// Readiness for `/readyz`: not shutting down, and the stores answer.
    /// Keeps the `mcpd_ready` and `mcpd_store_up` gauges current.
    pub async fn readiness(&self) -> Result<(), String> {
        let store = self.check_stores().await;
        let result = if self.is_shutting_down() {
            Err("shutting down".to_string())
        } else {
            store.map_err(|e| e.to_string())
        };
        self.server.metrics.ready.set(i64::from(result.is_ok()));
        result
    }
}

/// A result serialised once (serialising our own types cannot fail).
fn to_raw(v: &impl serde::Serialize) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).unwrap_or_default()
}
