//! The stateless link's stand-in for the GET stream: a
//! `subscriptions/listen` for the upstream's list changes, over HTTP or
//! the pipe, reopened after a pause when it ends.

use std::sync::Arc;

use futures_util::future::{AbortHandle, Abortable};
use futures_util::StreamExt;
use mcpd_protocol::jsonrpc::Message;
use mcpd_protocol::methods;
use mcpd_protocol::sse::Decoder;
use serde_json::{json, Value};

use super::pipe::LISTEN_ID;
use super::stateless::{StatelessLink, Via};
use super::wire::{envelope, is_sse, text_json};

impl StatelessLink {
    /// The revision's stand-in for the GET stream: a `subscriptions/listen`
    /// for the upstream's list changes, which reach the actor as the
    /// session era's notifications (the catalogue refreshes, the gateway's
    /// clients hear of it). Reopened, after a pause, when it ends; closed
    /// with the link.
    pub fn listen(self: &Arc<Self>) {
        // The handle is kept before the loop runs: a link dropped at once
        // still stops it.
        let (abort, registration) = AbortHandle::new_pair();
        if let Some(old) = self
            .listening
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(abort)
        {
            old.abort();
        }
        let this = self.clone();
        actix::spawn(async move {
            let _ = Abortable::new(
                async move {
                    let mut pause = std::time::Duration::from_secs(1);
                    // Ends when the upstream refuses to listen (it has no
                    // such stream, or not for us): asking again would not help.
                    while this.listen_once().await {
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(std::time::Duration::from_secs(30));
                    }
                },
                registration,
            )
            .await;
        });
    }

    /// One listen stream, read to its end. `false`: the upstream refused
    /// it (no stream of notifications); `true`: it ended or could not be
    /// reached, and may be tried again.
    async fn listen_once(&self) -> bool {
        let params = json!({"_meta": envelope(None), "notifications": {
            "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}});
        let body = json!({"jsonrpc": "2.0", "id": LISTEN_ID, "method": methods::SUBSCRIPTIONS_LISTEN, "params": params});
        let http = match &self.via {
            Via::Http(http) => http,
            Via::Pipe(pipe) => {
                let Ok(mut ex) = pipe.send(&body) else {
                    return true;
                };
                while let Some(v) = ex.next().await {
                    if v.get("method").is_none() {
                        // Its answer: an error is a refusal, a result its end.
                        return v.get("error").is_none();
                    }
                    if !self.listened(v).await {
                        return false;
                    }
                }
                return true;
            }
        };
        let Ok(post) = http
            .post_json(methods::SUBSCRIPTIONS_LISTEN, None, &body, &[])
            .await
        else {
            return true;
        };
        let Ok(res) = post.send().await else {
            return true;
        };
        if !res.status().is_success() || !is_sse(&res) {
            tracing::info!(upstream = %self.reporter.upstream, status = %res.status(), "the upstream offers no subscriptions/listen stream: its list changes are read at each connection");
            return false;
        }
        let mut stream = res.bytes_stream();
        let mut decoder = Decoder::new();
        while let Some(Ok(chunk)) = stream.next().await {
            for event in decoder.feed(&chunk) {
                let Some(v) = event.data.and_then(|d| text_json(&d)) else {
                    continue;
                };
                if !self.listened(v).await {
                    return false;
                }
            }
        }
        true
    }

    /// A message of the listen stream: a notification goes to the actor
    /// (without the subscription id, this link's business); `false` once
    /// the actor is gone.
    async fn listened(&self, v: Value) -> bool {
        let Ok(Message::Notification(mut n)) = Message::from_value(v) else {
            return true; // the listen's own result: it ended
        };
        if n.method == methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED {
            return true;
        }
        if let Some(Value::Object(meta)) = n.params.as_mut().and_then(|p| p.get_mut("_meta")) {
            meta.remove("io.modelcontextprotocol/subscriptionId");
        }
        self.reporter
            .deliver(vec![Message::Notification(n)], None)
            .await
    }
}
