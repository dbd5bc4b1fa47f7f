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
        let (key, method) = self.prepared(key.map(str::to_owned), method).await?;
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
            match self.prepared(key, &method).await {
                Ok((key, method)) => ready.push((key, method, params)),
                Err(e) => return vec![Err(e)],
            }
        }
        {
            let (peer, timeout) = self.peer_and_timeout();
            peer.request_all(ready, timeout).await
        }
    }
}

impl RequestContext {
    /// A relayed question checked: its method as the peer takes it (one a
    /// server may send a client), the client declared the capability, and
    /// its key (`key`, or an automatic one).
    async fn prepared(
        &self,
        key: Option<String>,
        method: &str,
    ) -> Result<(String, &'static str), PeerError> {
        let (method, capability, kind) = asked_of_client(method)?;
        self.require_capability(capability).await?;
        Ok((key.unwrap_or_else(|| self.auto_key(kind)), method))
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
