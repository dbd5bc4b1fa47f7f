//! One stateless-era call across its rounds: where the current round's
//! messages go, the answers collected so far, the questions asked in this
//! round, and whether the call is parked between rounds.
//!
//! A round is one HTTP request of a multi round-trip request (MRTR). The
//! handler runs once, in one request actor, across every round: when it
//! asks something the client has not answered, the round ends with
//! `input_required` and the call is *parked* (the handler waits, alive);
//! the retry that brings the answers becomes the next round
//! ([`Call::resume`]) and the handler goes on from where it asked.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use mcpd_protocol::jsonrpc;
use mcpd_protocol::types::{InputRequest, JsonObject, LoggingLevel};
use mcpd_protocol::{ErrorObject, RequestId};
use serde_json::Value;
use tokio::sync::Notify;

use super::relay::Sink;
use crate::context::RoundEnd;
use crate::stream::StreamItem;

/// What a request run from its start brings besides itself.
pub(super) struct Fresh {
    /// The answers the client gave (sealed earlier, and this round's).
    pub(super) answers: JsonObject,
    /// What its `requestState` is bound to (`run::binding`).
    pub(super) binding: String,
    /// The task id the client named, which its answer carries (a
    /// `tasks/*` request for an upstream's own task).
    pub(super) shown_task: Option<String>,
}

/// The questions of the round under way.
#[derive(Default)]
pub(super) struct MrtrState {
    /// `inputRequests`: key → `{method, params}`.
    pub(super) inputs: BTreeMap<String, InputRequest>,
    /// `requiredCapabilities` the request lacks.
    pub(super) missing: JsonObject,
    /// A method that may not answer `input_required` asked anyway.
    pub(super) misplaced: bool,
}

/// What the handler asked in this round, and the signal that it did.
#[derive(Default)]
pub(super) struct Mrtr {
    pub(super) state: Mutex<MrtrState>,
    pub(super) signal: Notify,
}

impl Mrtr {
    /// How the round ends now that the handler asked: `input_required`,
    /// or an error when it cannot ask this client (see `interrupted`).
    pub(super) fn round_end(&self) -> RoundEnd {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match state.missing.is_empty() && !state.misplaced {
            true => RoundEnd::InputRequired,
            false => RoundEnd::Refused,
        }
    }

    /// Whether the round has something to end with: a question, or a
    /// reason it cannot ask. (The signal may carry a stale permit: two
    /// asks in one poll, the first taken by a waiter already registered,
    /// leave one behind.)
    pub(super) fn pending(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        !state.inputs.is_empty() || !state.missing.is_empty() || state.misplaced
    }

    pub(super) fn update(&self, f: impl FnOnce(&mut MrtrState)) {
        f(&mut self.state.lock().unwrap_or_else(|p| p.into_inner()));
        // A stored permit: the driver sees it after the handler's current
        // poll, by which time every concurrent ask (a `join!`) has registered.
        self.signal.notify_one();
    }
}

/// Where one round's messages go: the round's response stream, the
/// JSON-RPC id its answer carries, and what its `_meta` asked for.
pub(super) struct RoundOut {
    pub(super) writer: Sink,
    /// Whether something was sent before the answer (the answer is then
    /// an SSE event rather than a JSON body).
    pub(super) emitted: AtomicBool,
    pub(super) id: RequestId,
    pub(super) progress_token: Option<Value>,
    pub(super) log_level: Option<LoggingLevel>,
}

impl RoundOut {
    pub(super) fn new(
        writer: Sink,
        id: RequestId,
        progress_token: Option<Value>,
        log_level: Option<LoggingLevel>,
    ) -> Arc<Self> {
        Arc::new(Self {
            writer,
            emitted: AtomicBool::new(false),
            id,
            progress_token,
            log_level,
        })
    }

    /// The round's answer as the stream's last item: a JSON body, or an
    /// SSE event when something went before it.
    pub(super) fn answer(&self, outcome: &Result<Value, ErrorObject>) -> StreamItem {
        let data = Bytes::from(jsonrpc::outcome_bytes(&self.id, outcome));
        match self.emitted.load(Ordering::Acquire) {
            true => StreamItem::Event {
                id: None,
                data,
                retry_ms: None,
            },
            false => StreamItem::Json {
                data,
                error: outcome.as_ref().err().map(|e| e.code),
            },
        }
    }

    /// Sends a message before the answer.
    pub(super) async fn emit(&self, data: Bytes) -> Result<(), ()> {
        self.emitted.store(true, Ordering::Release);
        let item = StreamItem::Event {
            id: None,
            data,
            retry_ms: None,
        };
        self.writer.send(item).await
    }
}

struct CallState {
    /// The round under way, from 1; `None` while parked or over.
    out: Option<Arc<RoundOut>>,
    /// The number of the round under way (or, parked, of the round that
    /// answered `input_required`).
    round: u64,
    /// Waiting between rounds for a retry.
    parked: bool,
    /// Over: expired or cancelled while parked; no retry resumes it.
    over: bool,
    /// Every answer so far, by input key.
    answers: JsonObject,
}

/// One call across its rounds; shared by its driver, its peer and (while
/// parked) the parking table.
pub(super) struct Call {
    state: Mutex<CallState>,
    pub(super) mrtr: Mrtr,
    /// New answers arrived: handlers waiting on a question look again.
    pub(super) answered: Notify,
    /// A retry resumed the parked call.
    pub(super) resumed: Notify,
    /// The call is to be stopped (the client left mid-round, or it
    /// expired parked): the request actor cancels it.
    cancel: Notify,
}

impl Call {
    pub(super) fn new(out: Arc<RoundOut>, answers: JsonObject) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(CallState {
                out: Some(out),
                round: 1,
                parked: false,
                over: false,
                answers,
            }),
            mrtr: Mrtr::default(),
            answered: Notify::new(),
            resumed: Notify::new(),
            cancel: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CallState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The round under way (`None` while parked).
    pub(super) fn out(&self) -> Option<Arc<RoundOut>> {
        self.lock().out.clone()
    }

    /// The number of the round under way.
    pub(super) fn round(&self) -> u64 {
        self.lock().round
    }

    /// The answer to `key`, if the client gave one.
    pub(super) fn answer(&self, key: &str) -> Option<Value> {
        self.lock().answers.get(key).cloned()
    }

    /// Every answer so far.
    pub(super) fn answers(&self) -> JsonObject {
        self.lock().answers.clone()
    }

    /// The bytes of every answer so far, as JSON (measured in place).
    pub(super) fn answers_bytes(&self) -> usize {
        serde_json::to_vec(&self.lock().answers).map_or(0, |v| v.len())
    }

    /// Forgets the answer to `key` (it did not fit the question).
    pub(super) fn forget(&self, key: &str) {
        self.lock().answers.remove(key);
    }

    /// Ends the round with `input_required`: the call waits parked, and
    /// the round's stream gets `item` as its last message and ends.
    pub(super) async fn park(&self, answer: impl FnOnce(&RoundOut) -> StreamItem) {
        let out = {
            let mut s = self.lock();
            s.parked = true;
            s.out.take()
        };
        if let Some(out) = out {
            let item = answer(&out);
            let _ = out.writer.send(item).await;
        }
    }

    /// Ends a parked call that no retry resumed in time; `false` when a
    /// retry came first (it runs on).
    pub(super) fn expire(&self) -> bool {
        let mut s = self.lock();
        if !s.parked {
            return false;
        }
        s.parked = false;
        s.over = true;
        true
    }

    /// The retry of round `round` brings `answers` and its own stream:
    /// the parked call goes on as the next round. `false` (nothing
    /// changed; `out` handed back) when the call is not parked at that round.
    pub(super) fn resume(
        &self,
        round: u64,
        out: Arc<RoundOut>,
        answers: JsonObject,
    ) -> Result<(), Arc<RoundOut>> {
        {
            let mut s = self.lock();
            if !s.parked || s.over || s.round != round {
                return Err(out);
            }
            s.parked = false;
            s.round += 1;
            s.out = Some(out);
            s.answers.extend(answers);
            let answered = &s.answers;
            self.mrtr
                .state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .inputs
                .retain(|k, _| !answered.contains_key(k));
        }
        self.answered.notify_waiters();
        self.resumed.notify_one();
        Ok(())
    }

    /// Asks the request actor to stop the call.
    pub(super) fn stop(&self) {
        {
            let mut s = self.lock();
            s.over = true;
            s.out = None;
        }
        self.cancel.notify_one();
    }

    /// Resolves when the call is to be stopped.
    pub(super) async fn stopped(&self) {
        self.cancel.notified().await
    }
}
