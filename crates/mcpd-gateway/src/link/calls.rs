//! What the stateless link keeps of its calls in flight: the rounds waiting
//! for their client's answers, the questions out, and each call's response
//! stream (closed on cancel); and what a `server/discover` answer says.

use std::collections::HashMap;

use futures_util::future::AbortHandle;
use mcpd_protocol::types::JsonObject;
use serde_json::Value;

/// A call waiting for its client's answers to the upstream's questions.
pub(crate) struct Round {
    pub(crate) method: String,
    pub(crate) params: Option<JsonObject>,
    /// The upstream's `requestState`, echoed unchanged.
    pub(crate) state: Option<Value>,
    pub(crate) answers: JsonObject,
    /// Questions not answered yet.
    pub(crate) open: usize,
    /// Rounds sent so far.
    pub(crate) sent: u32,
}

impl Calls {
    /// Call `id` ends here: its stream closes, its questions go.
    pub(crate) fn forget(&mut self, id: u64) {
        if let Some(h) = self.streams.remove(&id) {
            h.abort();
        }
        self.waiting.remove(&id);
        self.questions.retain(|_, (call, _)| *call != id);
    }
}

#[derive(Default)]
pub(crate) struct Calls {
    pub(crate) waiting: HashMap<u64, Round>,
    /// Our id of each question sent to the actor: its call and its key.
    pub(crate) questions: HashMap<String, (u64, String)>,
    pub(crate) next_question: u64,
    /// The response stream of each call in flight, to close on cancel.
    pub(crate) streams: HashMap<u64, AbortHandle>,
}

/// Why `server/discover` did not work.
pub enum Discovery {
    /// The server answered, but not as a 2026-07-28 server would: it speaks
    /// an older revision.
    NotModern(String),
    /// It could not be reached.
    Unreachable(String),
}

/// The `initialize` result the actor reads, from a `server/discover`
/// answer (`ok`: the transport said it succeeded; `text`: the answer).
pub(crate) fn discovered((ok, text): (bool, String), upstream: &str) -> Result<Value, Discovery> {
    let json = super::wire::text_json(&text);
    let result = match json.as_ref().and_then(|j| j.get("result")) {
        Some(r) if ok => r,
        _ => {
            return Err(Discovery::NotModern(format!(
                "server/discover answered: {}",
                text.chars().take(200).collect::<String>()
            )))
        }
    };
    let supported = result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|v| v == super::wire::VERSION));
    if !supported {
        return Err(Discovery::NotModern(format!(
            "server/discover does not list {}",
            super::wire::VERSION
        )));
    }
    let info = result
        .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({"name": upstream, "version": ""}));
    let mut init = serde_json::json!({
        "protocolVersion": super::wire::VERSION,
        "capabilities": result.get("capabilities").cloned().unwrap_or_else(|| serde_json::json!({})),
        "serverInfo": info,
    });
    if let Some(i) = result.get("instructions") {
        init["instructions"] = i.clone();
    }
    Ok(init)
}
