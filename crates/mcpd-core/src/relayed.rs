//! Questions relayed as they came, for a gateway forwarding an upstream
//! server's requests to the client of the call they belong to.

use mcpd_protocol::methods;
use serde_json::Value;

use crate::context::{PeerError, RequestContext};

impl RequestContext {
    /// Relays a question to the client as is (`sampling/createMessage`,
    /// `elicitation/create` or `roots/list`), for a gateway forwarding an
    /// upstream server's request: the client's raw answer.
    pub async fn ask_client(&self, method: &str, params: Value) -> Result<Value, PeerError> {
        self.ask_client_as(None, method, params).await
    }

    /// [`Self::ask_client`] under `key` when given: a 2026-07-28 upstream's
    /// own input-request key, kept for a 2026-07-28 client's
    /// `inputRequests`.
    pub async fn ask_client_as(
        &self,
        key: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, PeerError> {
        let (method, capability, kind) = asked_of_client(method)?;
        self.require_capability(capability).await?;
        let key = match key {
            Some(k) => k.to_owned(),
            None => self.auto_key(kind),
        };
        {
            let (peer, timeout) = self.peer_and_timeout();
            peer.request(&key, method, params, timeout).await
        }
    }

    /// Several of [`Self::ask_client_as`]'s questions at once (a gateway
    /// relaying one round of a 2026-07-28 upstream's questions): the
    /// answers in the same order.
    pub async fn ask_clients_as(
        &self,
        asks: Vec<(Option<String>, String, Value)>,
    ) -> Vec<Result<Value, PeerError>> {
        let mut ready = Vec::new();
        for (key, method, params) in asks {
            let (method, capability, kind) = match asked_of_client(&method) {
                Ok(m) => m,
                Err(e) => return vec![Err(e)],
            };
            if let Err(e) = self.require_capability(capability).await {
                return vec![Err(e)];
            }
            let key = key.unwrap_or_else(|| self.auto_key(kind));
            ready.push((key, method, params));
        }
        {
            let (peer, timeout) = self.peer_and_timeout();
            peer.request_all(ready, timeout).await
        }
    }
}

/// A server → client request's method, the capability it needs and the
/// kind its automatic keys are named after.
fn asked_of_client(method: &str) -> Result<(&'static str, &'static str, &'static str), PeerError> {
    Ok(match method {
        methods::SAMPLING_CREATE_MESSAGE => {
            (methods::SAMPLING_CREATE_MESSAGE, "sampling", "sampling")
        }
        methods::ELICITATION_CREATE => (methods::ELICITATION_CREATE, "elicitation", "elicitation"),
        methods::ROOTS_LIST => (methods::ROOTS_LIST, "roots", "roots"),
        other => {
            return Err(PeerError::Malformed(format!(
                "{other} is not a request a server may send a client"
            )))
        }
    })
}
