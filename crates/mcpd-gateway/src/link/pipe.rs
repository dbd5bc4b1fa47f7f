//! A 2026-07-28 upstream over stdio (`protocol = "stateless"` on a
//! `command`): each request a line carrying the `_meta` envelope, answered
//! by a line with its id. What comes for a request — its progress (by its
//! token), its answer — goes to that request's [`Exchange`]; the listen
//! stream's notifications to the listen; anything else (a list change) to
//! the actor. A request dropped before its answer is cancelled upstream
//! with `notifications/cancelled`, the revision's stdio form. The stateless
//! link runs its rounds over this as over HTTP.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use mcpd_protocol::methods;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::decode::read;
use super::report::Reporter;

/// The id of the listen request on a pipe.
pub(crate) const LISTEN_ID: &str = "mcpd-listen";

/// The child's stdin and who waits for what comes back.
pub struct PipeWire {
    /// The child's stdin (set once the child runs).
    lines: OnceLock<mpsc::Sender<String>>,
    /// Wire id → where that request's messages go.
    waiting: Mutex<HashMap<String, mpsc::UnboundedSender<Value>>>,
    /// Progress token (as JSON text) → the wire id of its request.
    tokens: Mutex<HashMap<String, String>>,
    reporter: Reporter,
}

impl PipeWire {
    pub fn new(reporter: Reporter) -> Arc<Self> {
        Arc::new(Self {
            lines: OnceLock::new(),
            waiting: Mutex::default(),
            tokens: Mutex::default(),
            reporter,
        })
    }

    /// The child runs: this is its stdin.
    pub(crate) fn attach(&self, lines: mpsc::Sender<String>) {
        let _ = self.lines.set(lines);
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::UnboundedSender<Value>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn tokens(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.tokens.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One line from the child; `false` once the actor is gone.
    pub(crate) async fn on_line(&self, v: Value) -> bool {
        if v.get("method").is_none() {
            // An answer: to its request, if anyone still waits for it.
            let id = v.get("id").and_then(Value::as_str).map(str::to_owned);
            match id.and_then(|id| self.waiting().remove(&id)) {
                Some(tx) => {
                    let _ = tx.send(v);
                }
                None => {
                    tracing::debug!(upstream = %self.reporter.upstream, "an answer to no request waiting, dropped")
                }
            }
            return true;
        }
        let to = match v.pointer("/params/progressToken") {
            Some(t) => self.tokens().get(&t.to_string()).cloned(),
            None if v
                .pointer("/params/_meta/io.modelcontextprotocol~1subscriptionId")
                .is_some() =>
            {
                Some(LISTEN_ID.to_owned())
            }
            None => None,
        };
        if let Some(tx) = to.and_then(|id| self.waiting().get(&id).cloned()) {
            let _ = tx.send(v);
            return true;
        }
        let messages = read(&self.reporter.upstream, v);
        messages.is_empty() || self.reporter.deliver(messages, None).await
    }

    /// The process ended: every exchange ends with it (its `next` is `None`).
    pub(crate) fn closed(&self) {
        self.waiting().clear();
        self.tokens().clear();
    }

    /// Sends `body` (a request whose id is a string) and returns its
    /// exchange: its messages, its answer last.
    pub(crate) fn send(self: &Arc<Self>, body: &Value) -> Result<Exchange, String> {
        let id = body
            .get("id")
            .and_then(Value::as_str)
            .ok_or("a request without a string id")?
            .to_owned();
        let token = body
            .pointer("/params/_meta/progressToken")
            .map(Value::to_string);
        let (tx, rx) = mpsc::unbounded_channel();
        self.waiting().insert(id.clone(), tx);
        if let Some(t) = &token {
            self.tokens().insert(t.clone(), id.clone());
        }
        let exchange = Exchange {
            rx,
            wire: self.clone(),
            id,
            token,
            answered: false,
        };
        self.write(body)?;
        Ok(exchange)
    }

    fn write(&self, msg: &Value) -> Result<(), String> {
        let lines = self.lines.get().ok_or("the process is not running")?;
        lines
            .try_send(msg.to_string())
            .map_err(|e| format!("the process's input is full or closed: {e}"))
    }
}

/// One request on the pipe: what comes for it, until its answer.
pub(crate) struct Exchange {
    rx: mpsc::UnboundedReceiver<Value>,
    wire: Arc<PipeWire>,
    id: String,
    token: Option<String>,
    answered: bool,
}

impl Exchange {
    /// The next message for the request (its answer is the last);
    /// `None` when the process ended first.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        let v = self.rx.recv().await?;
        if v.get("method").is_none() {
            self.answered = true;
        }
        Some(v)
    }
}

impl Drop for Exchange {
    /// Forgotten; cancelled upstream when it had no answer yet.
    fn drop(&mut self) {
        let waited = self.wire.waiting().remove(&self.id).is_some();
        if let Some(t) = &self.token {
            self.wire.tokens().remove(t);
        }
        // Only a request the upstream has not answered yet.
        if waited && !self.answered {
            let cancel = json!({"jsonrpc": "2.0", "method": methods::NOTIFICATION_CANCELLED,
                "params": {"requestId": self.id, "reason": "the caller stopped waiting"}});
            let _ = self.wire.write(&cancel);
        }
    }
}
