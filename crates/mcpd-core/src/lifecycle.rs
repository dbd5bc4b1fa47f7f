//! A session's start and the server's end, in one place for every
//! transport (POST, HTTP+SSE, stdio): the rule of what a connection may
//! send before and after `initialize` ([`admit`]), `initialize` itself
//! (negotiation, the session cap, the directory record) with one error
//! mapping, readiness, and shutdown.

use std::sync::Arc;

use mcpd_protocol::jsonrpc::{self, Message, Request};
use mcpd_protocol::methods::Handler;
use mcpd_protocol::types::{parse_params_owned, InitializeParams, InitializeResult, JsonObject};
use mcpd_protocol::{ErrorCode, ErrorObject, ProtocolVersion};
use mcpd_store::{EventLog, SessionDirectory, SessionId, StoreError};
use serde_json::value::RawValue;
use serde_json::Value;
use tracing::Instrument;

use mcpd_telemetry::Clean;

use crate::caller::Caller;
use crate::cluster::Cluster;
use crate::dispatch::McpServer;
use crate::session::SessionRecord;
use crate::sessions::{SessionHandle, SessionTable};

/// What a body may do on a connection, by the lifecycle's rules
/// (https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle): [`admit`] decides, the transport acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// One `initialize` request on a connection without a session: start one
    /// with [`Lifecycle::initialize`].
    Initialize,
    /// Messages for the connection's session.
    Session,
    /// Before `initialize`, only pings (answered by [`pongs`]) and
    /// notifications (nothing to do yet).
    BeforeInitialize,
}

/// A body the lifecycle refuses: a JSON-RPC Invalid Request (HTTP 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LifecycleError {
    /// `initialize` came in a JSON-RPC batch (it must come alone).
    #[error("initialize must be sent alone, not in a JSON-RPC batch")]
    InitializeInBatch,
    /// `initialize` on a connection that already has a session.
    #[error("Session already initialized: a new session starts with initialize without Mcp-Session-Id (HTTP) or on a new connection (HTTP+SSE, stdio)")]
    AlreadyInitialized,
    /// A request other than `ping` before `initialize`.
    #[error("send initialize first: before the session is initialized only ping is answered")]
    NotInitialized,
}

impl LifecycleError {
    /// The JSON-RPC error (`-32600` Invalid Request) that answers the body.
    pub fn to_error(self) -> ErrorObject {
        ErrorObject::new(ErrorCode::INVALID_REQUEST, self.to_string())
    }
}

/// The lifecycle's rule for one body, the same on every transport:
/// `initialize` comes alone and once per session; before it, only pings.
pub fn admit(
    messages: &[Message],
    batch: bool,
    initialized: bool,
) -> Result<Admission, LifecycleError> {
    let is = |m: &Message, by: Handler| matches!(m, Message::Request(r) if r.kind.is_some_and(|k| k.info().handler == by));
    let init = messages.iter().any(|m| is(m, Handler::Lifecycle));
    match (init, initialized) {
        (true, true) => Err(LifecycleError::AlreadyInitialized),
        (true, false) if batch => Err(LifecycleError::InitializeInBatch),
        (true, false) => Ok(Admission::Initialize),
        (false, true) => Ok(Admission::Session),
        (false, false) => {
            let only_pings = messages
                .iter()
                .all(|m| !matches!(m, Message::Request(_)) || is(m, Handler::Ping));
            if only_pings {
                Ok(Admission::BeforeInitialize)
            } else {
                Err(LifecycleError::NotInitialized)
            }
        }
    }
}

/// `{}` for each ping of a body admitted [`Admission::BeforeInitialize`].
fn pongs(messages: &[Message]) -> Vec<Vec<u8>> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Request(r) => Some(jsonrpc::result_bytes(&r.id, &JsonObject::new())),
            _ => None,
        })
        .collect()
}

/// Why `initialize` did not create a session.
#[derive(Debug, thiserror::Error)]
pub enum InitializeError {
    /// Malformed params: a JSON-RPC error response.
    #[error("{0}")]
    InvalidParams(ErrorObject),
    /// The session cap is reached.
    #[error("Too many sessions (limit {0}); retry later")]
    TooManySessions(usize),
    /// The client holds as many sessions as one client may.
    #[error(
        "This client holds {0} sessions, the most one client may hold here \
         (limits.max_sessions_per_client) and all of them in use; end one it \
         no longer needs with DELETE, or retry later"
    )]
    TooManyForClient(usize),
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

impl crate::dispatch::ErrorKind for InitializeError {
    /// The code the answer carries (`-32005` for a cap, `-32603` for the
    /// store).
    fn error_code(&self) -> ErrorCode {
        match self {
            InitializeError::InvalidParams(e) | InitializeError::Upstream(e) => e.code,
            InitializeError::TooManySessions(_) | InitializeError::TooManyForClient(_) => {
                ErrorCode::OVERLOADED
            }
            InitializeError::Store(_) => ErrorCode::INTERNAL_ERROR,
            InitializeError::ShuttingDown => ErrorCode::OVERLOADED,
        }
    }
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

/// One endpoint's session-era lifecycle: `initialize` (negotiation, the
/// session caps, the directory record), the pings before it, readiness and
/// the start of shutdown.
pub struct Lifecycle {
    server: Arc<McpServer>,
    sessions: Arc<SessionTable>,
    log: Arc<dyn EventLog>,
    directory: Arc<dyn SessionDirectory>,
    cluster: Arc<dyn Cluster>,
}

impl Lifecycle {
    /// Over the endpoint's parts ([`crate::Node::new`] builds it).
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
        }
    }

    /// The answers to a body admitted [`Admission::BeforeInitialize`]: `{}`
    /// for each ping.
    pub fn pongs(&self, messages: &[Message]) -> Vec<Vec<u8>> {
        for m in messages {
            if let Message::Request(r) = m {
                self.server.watch(r, None).ok();
            }
        }
        pongs(messages)
    }

    /// Handles `initialize`: negotiates the revision, records the session in
    /// the directory, and starts its actor on the current arbiter.
    pub async fn initialize(
        &self,
        req: Request,
        caller: &Caller,
    ) -> Result<(SessionHandle, Box<RawValue>), InitializeError> {
        let watch = self.server.watch(&req, None);
        let span = watch.span().clone();
        let outcome = self
            .initialize_session(req.params, caller)
            .instrument(span)
            .await;
        watch.finish(&outcome);
        outcome
    }

    async fn initialize_session(
        &self,
        params: Option<JsonObject>,
        caller: &Caller,
    ) -> Result<(SessionHandle, Box<RawValue>), InitializeError> {
        let p: InitializeParams =
            parse_params_owned(params).map_err(InitializeError::InvalidParams)?;
        let client: Arc<str> = caller
            .client
            .clone()
            .or_else(|| caller.principal.clone())
            .unwrap_or_else(|| Arc::from(""));
        let version = ProtocolVersion::negotiate(&p.protocol_version);
        let mut record = SessionRecord::new(version, p.capabilities, p.client_info);
        record.principal = caller.principal.as_deref().map(str::to_owned);
        record.client = Some(client.to_string());
        let bytes = record.to_bytes();
        if bytes.len() > MAX_CLIENT_INFO_BYTES {
            // Only then can one of the client's own parts be over its limit.
            check_sizes(&record).map_err(InitializeError::InvalidParams)?;
        }
        if self.is_shutting_down() {
            return Err(InitializeError::ShuttingDown);
        }
        let limit = self.server.limits.max_sessions;
        if self.sessions.len() >= limit && !self.sessions.evict_unused(None).await {
            return Err(InitializeError::TooManySessions(limit));
        }
        let per_client = self.server.limits.max_sessions_per_client;
        if self.sessions.sessions_of(&client) >= per_client
            && !self.sessions.evict_unused(Some(&client)).await
        {
            return Err(InitializeError::TooManyForClient(per_client));
        }
        let id = SessionId::from(uuid::Uuid::new_v4().simple().to_string());
        // A pass-through server answers with its upstream's identity.
        let upstream = match &self.server.forward_all {
            Some(f) => Some(
                f.handshake(Some(id.as_str()), Some(caller))
                    .await
                    .map_err(InitializeError::Upstream)?,
            ),
            None => None,
        };
        // The record and this replica as its holder, in one round trip.
        let holder = self.cluster.shared().then(|| self.cluster.replica());
        self.directory
            .create(&id, bytes, holder)
            .await
            .map_err(InitializeError::Store)?;
        // Debug, not info: at thousands of sessions a second a line each
        // would cost more than the session (`mcpd_sessions_created_total`
        // counts them).
        tracing::debug!(session = %id, version = %version, client = %Clean(&record.client_info.name), "session created");
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
        self.sessions.begin_shutdown();
        self.server.metrics.ready.set(0);
    }

    /// Set on SIGTERM (kept by the session table, which stops answering
    /// for sessions it no longer holds): readiness fails and new sessions
    /// are refused.
    pub fn is_shutting_down(&self) -> bool {
        self.sessions.is_stopping()
    }

    /// The stores answer (keeps `mcpd_store_up` current).
    pub async fn check_stores(&self) -> Result<(), StoreError> {
        let result = self.log.check().await;
        self.server.metrics.store_up.set(i64::from(result.is_ok()));
        result
    }

    /// Readiness for `/readyz`: not shutting down, every aggregated
    /// upstream's catalogue loaded once (or failed for good), and the
    /// stores answer.
    /// Keeps the `mcpd_ready` and `mcpd_store_up` gauges current.
    pub async fn readiness(&self) -> Result<(), String> {
        let store = self.check_stores().await;
        let loading = self.server.warmup.pending();
        let result = if self.is_shutting_down() {
            Err("shutting down".to_string())
        } else if loading > 0 {
            Err(format!(
                "loading the catalogue of {loading} aggregated upstream(s)"
            ))
        } else if let Some(why) = self.server.upstreams.values().find_map(|u| u.unready()) {
            Err(why)
        } else {
            store.map_err(|e| e.to_string())
        };
        self.server.metrics.ready.set(i64::from(result.is_ok()));
        result
    }
}

/// The most a session keeps of what the client says about itself, in
/// bytes of JSON: `clientInfo` and `capabilities`.
pub const MAX_CLIENT_INFO_BYTES: usize = 4 * 1024;
/// The most a session keeps of the client's `capabilities`, in bytes of
/// JSON; a larger `initialize` is refused with `-32602`.
pub const MAX_CAPABILITIES_BYTES: usize = 16 * 1024;

/// What the client said of itself at `initialize`, which the session keeps
/// (and stores, and sends to every replica that rebuilds it), must be of a
/// sensible size.
fn check_sizes(p: &SessionRecord) -> Result<(), ErrorObject> {
    for (what, len, max) in [
        (
            "params.clientInfo",
            serde_json::to_vec(&p.client_info).map_or(0, |v| v.len()),
            MAX_CLIENT_INFO_BYTES,
        ),
        (
            "params.capabilities",
            serde_json::to_vec(&p.client_capabilities).map_or(0, |v| v.len()),
            MAX_CAPABILITIES_BYTES,
        ),
    ] {
        if len > max {
            return Err(ErrorObject::invalid_params(format!(
                "{what} is {len} bytes of JSON; this server keeps at most {max}"
            )));
        }
    }
    Ok(())
}

/// A result serialised once (serialising our own types cannot fail).
fn to_raw(v: &impl serde::Serialize) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use mcpd_protocol::jsonrpc::Body;

    use super::{admit, pongs, Admission, LifecycleError};

    fn body(json: &str) -> Body {
        Body::parse(json.as_bytes()).expect("a valid body")
    }

    const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    const PING: &str = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    const CALL: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    const NOTE: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

    #[test]
    fn the_rule_for_every_kind_of_body() {
        use Admission::*;
        use LifecycleError::*;
        let batch = |items: &[&str]| format!("[{}]", items.join(","));
        let cases: Vec<(String, bool, Result<Admission, LifecycleError>)> = vec![
            (INIT.into(), false, Ok(Initialize)),
            (INIT.into(), true, Err(AlreadyInitialized)),
            (batch(&[INIT, PING]), false, Err(InitializeInBatch)),
            (batch(&[INIT]), false, Err(InitializeInBatch)),
            (batch(&[PING, INIT]), true, Err(AlreadyInitialized)),
            (PING.into(), false, Ok(BeforeInitialize)),
            (NOTE.into(), false, Ok(BeforeInitialize)),
            (batch(&[PING, NOTE]), false, Ok(BeforeInitialize)),
            (CALL.into(), false, Err(NotInitialized)),
            (batch(&[PING, CALL]), false, Err(NotInitialized)),
            (CALL.into(), true, Ok(Session)),
            (PING.into(), true, Ok(Session)),
            (batch(&[CALL, NOTE]), true, Ok(Session)),
        ];
        for (json, initialized, want) in cases {
            let b = body(&json);
            assert_eq!(
                admit(b.messages(), b.is_batch(), initialized),
                want,
                "{json} (initialized: {initialized})"
            );
        }
    }

    #[test]
    fn pings_before_initialize_get_empty_results() {
        let b = body(&format!("[{PING},{NOTE}]"));
        let answers: Vec<String> = pongs(b.messages())
            .into_iter()
            .map(|a| String::from_utf8(a).expect("UTF-8"))
            .collect();
        assert_eq!(answers, [r#"{"jsonrpc":"2.0","id":2,"result":{}}"#]);
    }

    #[test]
    fn refusals_are_invalid_requests_that_say_what_to_do() {
        let e = LifecycleError::NotInitialized.to_error();
        assert_eq!(e.code.0, -32600);
        assert!(e.message.contains("send initialize first"), "{}", e.message);
        let e = LifecycleError::AlreadyInitialized.to_error();
        assert!(
            e.message.contains("without Mcp-Session-Id"),
            "{}",
            e.message
        );
    }
}
