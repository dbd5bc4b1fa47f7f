//! The session era's [`Peer`]: a request's outbound messages go through its
//! session actor onto the request's own SSE stream.

use std::time::Duration;

use actix::prelude::*;
use async_trait::async_trait;
use mcpd_protocol::types::{LoggingLevel, LoggingMessageParams};
use mcpd_store::StreamId;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::context::{Peer, PeerError};
use crate::request::RequestKey;
use mcpd_protocol::{ErrorObject, RequestId};

use super::SessionActor;

// --- what a request actor sends its session ---

#[derive(Message)]
#[rtype(result = "Result<(), PeerError>")]
pub(crate) struct Emit {
    pub key: RequestKey,
    pub stream: StreamId,
    pub message: Value,
}

#[derive(Message)]
#[rtype(result = "Result<(), PeerError>")]
pub(crate) struct Log {
    pub key: RequestKey,
    pub stream: StreamId,
    pub params: LoggingMessageParams,
}

#[derive(Message)]
#[rtype(result = "Result<RequestId, PeerError>")]
pub(crate) struct Ask {
    pub key: RequestKey,
    pub stream: StreamId,
    pub method: &'static str,
    pub params: Value,
    pub reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct AskTimedOut {
    pub id: RequestId,
}

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Release {
    pub stream: StreamId,
}

pub(crate) struct SessionPeer {
    session: Addr<SessionActor>,
    key: RequestKey,
    stream: StreamId,
}

impl SessionPeer {
    pub fn new(session: Addr<SessionActor>, key: RequestKey, stream: StreamId) -> Self {
        Self {
            session,
            key,
            stream,
        }
    }
}

// `send` (not `do_send`) waits for room in the session's bounded mailbox, so
// a handler that floods notifications is slowed down instead of queueing
// without limit.
#[async_trait]
impl Peer for SessionPeer {
    async fn notify(&self, method: &'static str, params: Value) -> Result<(), PeerError> {
        let message = mcpd_protocol::jsonrpc::notification(method, params);
        self.session
            .send(Emit {
                key: self.key,
                stream: self.stream.clone(),
                message,
            })
            .await
            .map_err(|_| PeerError::Gone)?
    }

    async fn log(
        &self,
        level: LoggingLevel,
        logger: Option<String>,
        data: Value,
    ) -> Result<(), PeerError> {
        let params = LoggingMessageParams {
            level,
            logger,
            data,
        };
        self.session
            .send(Log {
                key: self.key,
                stream: self.stream.clone(),
                params,
            })
            .await
            .map_err(|_| PeerError::Gone)?
    }

    async fn request(
        &self,
        _key: &str,
        method: &'static str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, PeerError> {
        let (reply, answer) = oneshot::channel();
        let id = self
            .session
            .send(Ask {
                key: self.key,
                stream: self.stream.clone(),
                method,
                params,
                reply,
            })
            .await
            .map_err(|_| PeerError::Gone)??;
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(Ok(v))) => Ok(v),
            Ok(Ok(Err(e))) => Err(PeerError::Client(e)),
            Ok(Err(_)) => Err(PeerError::Gone),
            Err(_) => {
                // `do_send`: at most one per question, and each question
                // came through the bounded mailbox (`send`) first; the
                // client must hear the cancellation.
                self.session.do_send(AskTimedOut { id });
                Err(PeerError::Timeout(timeout))
            }
        }
    }

    async fn release_connection(&self) {
        let _ = self
            .session
            .send(Release {
                stream: self.stream.clone(),
            })
            .await;
    }
}
