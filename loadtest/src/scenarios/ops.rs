//! The operations of `resume`, `mixed` and `soak`. Besides `echo`, they use
//! the `countdown` tool of mcpd's demo tool set (`steps` progress
//! notifications `interval_ms` apart, then `done`; cancellable).

use std::time::Duration;

use anyhow::bail;
use serde_json::{json, Value};

use crate::client::{self, check_result, is_sse, response_in, Client, Session};
use crate::sse;

/// What an operation saw, beyond success.
#[derive(Debug, Default, Clone, Copy)]
pub struct Seen {
    /// Events received on a resumed stream.
    pub replayed: u64,
}

/// `echo`, answered however the server likes.
pub async fn echo(s: &Session, id: u64) -> anyhow::Result<Seen> {
    s.call(id, "echo", &json!({"message": "hello"}), false)
        .await?;
    Ok(Seen::default())
}

/// `countdown` with a progress token: an SSE answer with progress events.
pub async fn progress(s: &Session, id: u64, steps: u64, interval_ms: u64) -> anyhow::Result<Seen> {
    let args = json!({"steps": steps, "interval_ms": interval_ms});
    if s.call(id, "countdown", &args, true).await? != client::Answer::Sse {
        bail!("a call with progress was answered as JSON");
    }
    Ok(Seen::default())
}

/// `countdown` answered as SSE, the connection dropped after the first
/// event that carries an id, the stream resumed with `Last-Event-ID` and
/// read until the response.
pub async fn resume(s: &Session, id: u64, steps: u64, interval_ms: u64) -> anyhow::Result<Seen> {
    let args = json!({"steps": steps.max(1), "interval_ms": interval_ms});
    let r = s.start_call(id, "countdown", &args, true).await?;
    if !is_sse(&r) {
        bail!("answered as JSON: nothing to resume");
    }
    let want = json!(id);
    let mut reader = sse::Reader::new(r);
    let last = loop {
        match reader.next().await? {
            Some(data) => {
                if let Some(m) = response_in(&data, &want) {
                    // Finished before the first event with an id: no resumption possible.
                    check_result(&m)?;
                    bail!("the stream carried no event id before its response");
                }
                if let Some(last) = reader.last_event_id().filter(|l| !l.is_empty()) {
                    break last.to_owned();
                }
            }
            None => bail!("the stream ended without an event id"),
        }
    };
    drop(reader); // the client "loses" its connection here
    let mut reader = sse::Reader::new(s.get(Some(&last)).await?);
    let mut seen = Seen::default();
    while let Some(data) = reader.next().await? {
        seen.replayed += 1;
        if let Some(m) = response_in(&data, &want) {
            check_result(&m)?;
            // The server ends the stream after the response; do not wait long.
            let _ = tokio::time::timeout(Duration::from_secs(1), async {
                while let Ok(Some(_)) = reader.next().await {}
            })
            .await;
            return Ok(seen);
        }
    }
    bail!("the resumed stream ended without the response")
}

/// A long `countdown`, cancelled after its first progress notification;
/// the stream must then end without a successful result.
pub async fn cancel(s: &Session, id: u64) -> anyhow::Result<Seen> {
    let args = json!({"steps": 1000, "interval_ms": 10});
    let r = s.start_call(id, "countdown", &args, true).await?;
    if !is_sse(&r) {
        bail!("answered as JSON before it could be cancelled");
    }
    let want = json!(id);
    let mut reader = sse::Reader::new(r);
    loop {
        match reader.next().await? {
            Some(data) if is_progress(&data) => break,
            Some(data) if response_in(&data, &want).is_some() => {
                bail!("answered before the first progress notification")
            }
            Some(_) => {}
            None => bail!("the stream ended before any progress"),
        }
    }
    s.cancel(id).await?;
    let rest = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(data) = reader.next().await? {
            if let Some(m) = response_in(&data, &want) {
                if m.get("result").is_some() {
                    bail!("the cancelled request still completed: {m}");
                }
                // An error answer to a cancelled request is acceptable.
            }
        }
        Ok(())
    })
    .await;
    match rest {
        Ok(r) => r.map(|()| Seen::default()),
        Err(_) => bail!("the stream stayed open 5 s after the cancellation"),
    }
}

fn is_progress(data: &str) -> bool {
    serde_json::from_str::<Value>(data)
        .ok()
        .is_some_and(|m| m["method"] == "notifications/progress")
}

/// Session churn: a new session, one echo, DELETE.
pub async fn churn(c: &Client, id: u64) -> anyhow::Result<Seen> {
    let s = c.open_session().await?;
    let r = echo(&s, id).await;
    s.delete().await?;
    r
}

#[cfg(test)]
mod tests {
    #[test]
    fn progress_notifications_are_recognised() {
        assert!(super::is_progress(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#
        ));
        assert!(!super::is_progress(
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
        ));
        assert!(!super::is_progress(""));
    }
}
