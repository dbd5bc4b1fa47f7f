//! What a handler sees of its request: who asked, how to report progress and
//! logs, how to ask the client something, and whether it was cancelled.
//!
//! The context talks to a [`Peer`], not to a session: in the session era the
//! peer is the session actor (messages go on the request's SSE stream); a
//! stateless-era peer answers `ask` with a multi round-trip instead. Handlers
//! never learn which.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use mcpd_protocol::methods;
use mcpd_protocol::types::{
    ClientCapabilities, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult,
    JsonObject, ListRootsResult, LoggingLevel, ProgressParams, ProgressToken,
};
use mcpd_protocol::{ErrorObject, ProtocolVersion, RequestId};
use mcpd_store::{SessionId, TaskId};
use serde_json::Value;
use tokio::sync::Notify;

use crate::caller::Caller;

/// Why talking to the client failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PeerError {
    /// The client did not declare the capability this needs.
    #[error("the client did not declare the `{0}` capability")]
    MissingCapability(&'static str),
    /// The client answered with a JSON-RPC error.
    #[error("the client answered with an error: {0}")]
    Client(ErrorObject),
    /// No answer came in time (a `notifications/cancelled` was sent).
    #[error("the client did not answer within {0:?}")]
    Timeout(Duration),
    /// The client's answer did not have the expected shape.
    #[error("the client's answer was malformed: {0}")]
    Malformed(String),
    /// The session or request is gone (deleted, expired, cancelled).
    #[error("the request's session is gone")]
    Gone,
    /// The server refused what the handler asked of it (e.g. a task over a
    /// limit): the request answers with this error.
    #[error("{}", .0.message)]
    Refused(ErrorObject),
}

/// Where one request's outbound messages go.
#[async_trait]
pub trait Peer: Send + Sync + 'static {
    /// Sends a notification related to this request.
    async fn notify(&self, method: &'static str, params: Value) -> Result<(), PeerError>;
    /// Sends a log message, if the client's log level lets it through.
    async fn log(
        &self,
        level: LoggingLevel,
        logger: Option<String>,
        data: Value,
    ) -> Result<(), PeerError>;
    /// Asks the client (`method` is a server → client request) and waits for
    /// its answer. `key` names the question within this request: the
    /// stateless era uses it as the `inputRequests` key.
    async fn request(
        &self,
        key: &str,
        method: &'static str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, PeerError>;
    /// Several questions at once (`(key, method, params)`), their answers
    /// in the same order. The stateless era records them together, so that
    /// one `inputRequests` holds them all (asked one by one from other
    /// threads, the round could end after the first).
    async fn request_all(
        &self,
        asks: Vec<(String, &'static str, Value)>,
        timeout: Duration,
    ) -> Vec<Result<Value, PeerError>> {
        let asks = asks.into_iter().map(|(key, method, params)| async move {
            self.request(&key, method, params, timeout).await
        });
        futures_util::future::join_all(asks).await
    }
    /// The handler needs a client capability the client did not declare.
    /// The session era fails the call; the stateless era answers the whole
    /// request with `-32021` (and this never returns).
    async fn missing_capability(&self, capability: &'static str) -> PeerError {
        PeerError::MissingCapability(capability)
    }
    /// The client's answer to `key` did not have the expected shape. The
    /// stateless era asks again (the answer to the new question is
    /// returned); the session era fails the call.
    async fn ask_again(
        &self,
        _key: &str,
        _method: &'static str,
        _params: Value,
        error: String,
    ) -> Result<Value, PeerError> {
        Err(PeerError::Malformed(error))
    }
    /// A hint that this request will run long: the transport may close the
    /// client's connection and let it resume later (2025-11-25 SSE polling).
    async fn release_connection(&self) {}
    /// The task this request runs as, if it is one.
    fn task_id(&self) -> Option<&TaskId> {
        None
    }
    /// Turns the request into a task (see [`RequestContext::start_task`]).
    async fn start_task(&self) -> Result<Option<TaskId>, PeerError> {
        Ok(self.task_id().cloned())
    }
    /// The progress token reports go out under now, given the request's
    /// own (`first`): the stateless era's resumed round has its own.
    fn progress_token(&self, first: Option<&ProgressToken>) -> Option<ProgressToken> {
        first.cloned()
    }
    /// Whether [`Self::start_task`] can make this request a task.
    fn may_start_task(&self) -> bool {
        self.task_id().is_some()
    }
}

/// How a round of a multi round-trip request (the stateless era) ended
/// when its handler was set aside instead of finishing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundEnd {
    /// The client must answer the handler's questions first: the round
    /// answered `input_required`.
    InputRequired,
    /// The round answered with an error (a client capability the request
    /// did not declare, a method that may not ask).
    Refused,
}

/// Everything a handler gets besides its arguments.
#[derive(Clone)]
pub struct RequestContext {
    inner: Arc<Inner>,
}

struct Inner {
    request_id: RequestId,
    progress_token: Option<ProgressToken>,
    client_capabilities: Arc<ClientCapabilities>,
    protocol_version: ProtocolVersion,
    session_id: Option<SessionId>,
    peer: Arc<dyn Peer>,
    ask_timeout: Duration,
    caller: Caller,
    asks: std::sync::atomic::AtomicU64,
    cancelled: AtomicBool,
    cancel_notify: Notify,
    round_end: OnceLock<RoundEnd>,
}

/// Parts of a [`RequestContext`], filled in by whoever runs the request.
pub struct ContextParts {
    /// The request's JSON-RPC id, as the client sent it.
    pub request_id: RequestId,
    /// `params._meta.progressToken`; `None` drops every progress report.
    pub progress_token: Option<ProgressToken>,
    /// What the client declared: at `initialize` (session era), or in this
    /// request's `_meta` (stateless era).
    pub client_capabilities: Arc<ClientCapabilities>,
    /// The session's negotiated revision, or 2026-07-28 for a stateless request.
    pub protocol_version: ProtocolVersion,
    /// The session, in the session era only.
    pub session_id: Option<SessionId>,
    /// Where the request's notifications and questions go.
    pub peer: Arc<dyn Peer>,
    /// How long one question to the client may wait for its answer.
    pub ask_timeout: Duration,
    /// Who sent the request.
    pub caller: Caller,
}

impl RequestContext {
    /// A context for one run of a request, not yet cancelled.
    pub fn new(p: ContextParts) -> Self {
        Self {
            inner: Arc::new(Inner {
                request_id: p.request_id,
                progress_token: p.progress_token,
                client_capabilities: p.client_capabilities,
                protocol_version: p.protocol_version,
                session_id: p.session_id,
                peer: p.peer,
                ask_timeout: p.ask_timeout,
                caller: p.caller,
                asks: Default::default(),
                cancelled: AtomicBool::new(false),
                cancel_notify: Notify::new(),
                round_end: OnceLock::new(),
            }),
        }
    }

    /// The request's JSON-RPC id, as the client sent it.
    pub fn request_id(&self) -> &RequestId {
        &self.inner.request_id
    }

    /// Says how this round ended, before its handler is dropped (the
    /// request's outcome is counted from it, not as a cancellation).
    pub(crate) fn end_round(&self, how: RoundEnd) {
        let _ = self.inner.round_end.set(how);
    }

    /// How the round ended, when the handler was set aside.
    pub(crate) fn round_end(&self) -> Option<RoundEnd> {
        self.inner.round_end.get().copied()
    }

    /// The session this request belongs to, when the era has sessions.
    pub fn session_id(&self) -> Option<&str> {
        self.inner.session_id.as_deref()
    }

    /// Who sent the request (empty without auth).
    pub fn caller(&self) -> &Caller {
        &self.inner.caller
    }

    /// The revision the request speaks: the session's, or 2026-07-28.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.protocol_version
    }

    /// What the client declared it can do (sampling, elicitation, roots, ...).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.client_capabilities
    }

    /// Whether the client sent a progress token (progress is dropped otherwise).
    pub fn wants_progress(&self) -> bool {
        self.progress_token().is_some()
    }

    fn progress_token(&self) -> Option<ProgressToken> {
        self.inner
            .peer
            .progress_token(self.inner.progress_token.as_ref())
    }

    /// Reports progress. A no-op when the client asked for none.
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> Result<(), PeerError> {
        let Some(token) = self.progress_token() else {
            return Ok(());
        };
        let params = ProgressParams {
            progress_token: token,
            progress,
            total,
            message,
        };
        self.inner
            .peer
            .notify(methods::NOTIFICATION_PROGRESS, to_value(&params))
            .await
    }

    /// Sends a log message (`notifications/message`), filtered by the client's level.
    pub async fn log(&self, level: LoggingLevel, data: impl Into<Value>) -> Result<(), PeerError> {
        self.inner.peer.log(level, None, data.into()).await
    }

    /// [`Self::log`] with a `logger` name (e.g. relaying an upstream's log).
    pub async fn log_as(
        &self,
        level: LoggingLevel,
        logger: Option<String>,
        data: Value,
    ) -> Result<(), PeerError> {
        self.inner.peer.log(level, logger, data).await
    }

    /// Sends any notification related to this request.
    pub async fn notify(&self, method: &'static str, params: Value) -> Result<(), PeerError> {
        self.inner.peer.notify(method, params).await
    }

    /// Fails unless the client declared capability `name` (`sampling`,
    /// `elicitation`, `roots`). The stateless era answers the whole request
    /// with `-32021` naming it.
    pub async fn require_capability(&self, name: &'static str) -> Result<(), PeerError> {
        let caps = self.client_capabilities();
        let declared = match name {
            "sampling" => caps.sampling.is_some(),
            "elicitation" => caps.elicitation.is_some(),
            "roots" => caps.roots.is_some(),
            other => caps.other.contains_key(other),
        };
        if declared {
            Ok(())
        } else {
            Err(self.inner.peer.missing_capability(name).await)
        }
    }

    pub(crate) fn auto_key(&self, kind: &str) -> String {
        let n = self.inner.asks.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{kind}-{n}")
    }

    /// Asks the user a question through the client (`elicitation/create`,
    /// form mode) with a schema written by hand; the answer as it came.
    /// [`Self::elicit`] derives the schema from a type and parses the
    /// answer into it.
    pub async fn elicit_with_schema(
        &self,
        message: impl Into<String>,
        requested_schema: JsonObject,
    ) -> Result<ElicitResult, PeerError> {
        let key = self.auto_key("elicitation");
        self.elicit_as(&key, message, requested_schema).await
    }

    /// [`Self::elicit_with_schema`] under a key of the handler's choosing (the
    /// `inputRequests` key a stateless-era client sees).
    pub async fn elicit_as(
        &self,
        key: &str,
        message: impl Into<String>,
        requested_schema: JsonObject,
    ) -> Result<ElicitResult, PeerError> {
        if !self.client_capabilities().elicitation_form()
            || !self.protocol_version().has_elicitation()
        {
            return Err(self.inner.peer.missing_capability("elicitation").await);
        }
        let params = ElicitParams {
            message: message.into(),
            requested_schema,
        };
        self.ask(key, methods::ELICITATION_CREATE, to_value(&params))
            .await
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    pub async fn sample(
        &self,
        params: CreateMessageParams,
    ) -> Result<CreateMessageResult, PeerError> {
        let key = self.auto_key("sampling");
        self.sample_as(&key, params).await
    }

    /// [`Self::sample`] under a key of the handler's choosing.
    pub async fn sample_as(
        &self,
        key: &str,
        params: CreateMessageParams,
    ) -> Result<CreateMessageResult, PeerError> {
        if self.client_capabilities().sampling.is_none() {
            return Err(self.inner.peer.missing_capability("sampling").await);
        }
        self.ask(key, methods::SAMPLING_CREATE_MESSAGE, to_value(&params))
            .await
    }

    /// The peer that carries this request's questions, and how long each
    /// may wait (for the relay in `relayed.rs`).
    pub(crate) fn peer_and_timeout(&self) -> (&Arc<dyn Peer>, Duration) {
        (&self.inner.peer, self.inner.ask_timeout)
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn list_roots(&self) -> Result<ListRootsResult, PeerError> {
        let key = self.auto_key("roots");
        self.list_roots_as(&key).await
    }

    /// [`Self::list_roots`] under a key of the handler's choosing.
    pub async fn list_roots_as(&self, key: &str) -> Result<ListRootsResult, PeerError> {
        if self.client_capabilities().roots.is_none() {
            return Err(self.inner.peer.missing_capability("roots").await);
        }
        self.ask(key, methods::ROOTS_LIST, Value::Object(JsonObject::new()))
            .await
    }

    async fn ask<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
        method: &'static str,
        params: Value,
    ) -> Result<T, PeerError> {
        let peer = &self.inner.peer;
        let mut v = peer
            .request(key, method, params.clone(), self.inner.ask_timeout)
            .await?;
        loop {
            match serde_json::from_value(v) {
                Ok(t) => return Ok(t),
                Err(e) => {
                    v = peer
                        .ask_again(key, method, params.clone(), e.to_string())
                        .await?
                }
            }
        }
    }

    /// The id of the task this request runs as (the Tasks extension), or
    /// `None` while the client waits for its result.
    pub fn task_id(&self) -> Option<&TaskId> {
        self.inner.peer.task_id()
    }

    /// Turns this `tools/call` into a task, for a tool whose policy says
    /// the handler starts it ([`crate::handler::TaskPolicy::starts_in_handler`]):
    /// the client gets a `CreateTaskResult` now, and the handler's result
    /// goes to the task. Call it once every question that must be answered
    /// before the work starts has been answered (they are plain multi
    /// round-trip questions, asked before the task exists).
    ///
    /// `Ok(Some(id))`: this is task `id` from now on (or already was).
    /// `Ok(None)`: the request cannot become a task (the client did not
    /// declare the extension, or another era): go on and return the
    /// result. `Err`: the task could not be created (a limit, the store).
    pub async fn start_task(&self) -> Result<Option<TaskId>, PeerError> {
        self.inner.peer.start_task().await
    }

    /// Whether this request is, or can become, a task.
    pub fn may_be_task(&self) -> bool {
        self.inner.peer.may_start_task()
    }

    /// See [`Peer::release_connection`].
    pub async fn release_connection(&self) {
        self.inner.peer.release_connection().await;
    }

    /// True once the client cancelled this request (or it timed out). The
    /// handler's future is dropped right after, so this matters only for
    /// work the handler handed to other tasks.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// Resolves when the request is cancelled.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.cancel_notify.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }

    pub(crate) fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::Release);
        self.inner.cancel_notify.notify_waiters();
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}
