//! The caller's side of an upstream actor: a request relayed and awaited,
//! cancelled upstream when the caller stops waiting, and the handshake.

use std::time::Duration;

use actix::Addr;
use mcpd_core::RequestContext;
use mcpd_protocol::types::JsonObject;
use mcpd_protocol::{ErrorCode, ErrorObject};
use serde_json::Value;
use tokio::sync::oneshot;

use super::actor::UpstreamActor;
use super::messages::{connect_failed, Abandon, Call, Handshake};

/// Runs one request through an upstream actor: the raw outcome. Dropping
/// the future (the downstream request was cancelled) cancels it upstream.
pub async fn call(
    addr: &Addr<UpstreamActor>,
    upstream: &str,
    method: &str,
    params: Option<JsonObject>,
    ctx: Option<RequestContext>,
    timeout: Duration,
) -> Result<Value, ErrorObject> {
    let (reply, rx) = oneshot::channel();
    let id = addr
        .send(Call {
            method: method.to_owned(),
            params,
            ctx,
            reply,
        })
        .await
        .map_err(|_| connect_failed(upstream, "its connection actor stopped"))?;
    let mut guard = Guard {
        addr,
        id,
        done: false,
    };
    let out = match tokio::time::timeout(timeout, rx).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(_)) => Err(connect_failed(upstream, "its connection actor stopped")),
        Err(_) => {
            addr.do_send(Abandon {
                id,
                reason: "timed out".into(),
            });
            Err(ErrorObject::new(
                ErrorCode::REQUEST_TIMEOUT,
                format!(
                    "Upstream server '{upstream}' did not answer {method} within {} s",
                    timeout.as_secs()
                ),
            ))
        }
    };
    guard.done = true;
    out
}

/// Tells the actor when the caller stops waiting before the outcome.
struct Guard<'a> {
    addr: &'a Addr<UpstreamActor>,
    id: u64,
    done: bool,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.addr.do_send(Abandon {
                id: self.id,
                reason: "the client cancelled the request".into(),
            });
        }
    }
}

/// The upstream's `initialize` result.
pub async fn handshake(addr: &Addr<UpstreamActor>, upstream: &str) -> Result<Value, ErrorObject> {
    let (reply, rx) = oneshot::channel();
    addr.send(Handshake { reply })
        .await
        .map_err(|_| connect_failed(upstream, "its connection actor stopped"))?;
    rx.await
        .map_err(|_| connect_failed(upstream, "its connection actor stopped"))?
}
