//! A minimal Streamable HTTP MCP client: sessions, calls answered as JSON or
//! SSE (both parsed, the response found by id), GET streams, resumption
//! with `Last-Event-ID`, cancellation and DELETE.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use crate::sse;

/// What every session shares: the HTTP client (with the `--header`s as
/// default headers), the endpoint(s) and the offered protocol version.
#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    urls: Arc<[String]>,
    next_url: Arc<AtomicU64>,
    protocol_version: Arc<str>,
}

impl Client {
    pub fn new(
        urls: &[String],
        headers: HeaderMap,
        protocol_version: &str,
        pool_idle: usize,
    ) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .pool_max_idle_per_host(pool_idle)
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(10))
            .build()?;
        Ok(Self {
            http,
            urls: urls.to_vec().into(),
            next_url: Arc::new(AtomicU64::new(0)),
            protocol_version: protocol_version.into(),
        })
    }

    fn url(&self) -> &str {
        let n = self.next_url.fetch_add(1, Ordering::Relaxed) as usize;
        &self.urls[n % self.urls.len()]
    }

    /// initialize + notifications/initialized.
    pub async fn open_session(&self) -> anyhow::Result<Session> {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion": &*self.protocol_version, "capabilities":{},
            "clientInfo":{"name":"mcpd-loadtest","version":"1"}}});
        let r = self
            .http
            .post(self.url())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(init.to_string())
            .send()
            .await?;
        let status = r.status();
        let id = r
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let answer = read_answer(r, &json!(0)).await?;
        if !status.is_success() {
            bail!("initialize: HTTP {status}");
        }
        let version = answer["result"]["protocolVersion"]
            .as_str()
            .unwrap_or(&self.protocol_version)
            .to_owned();
        let s = Session {
            client: self.clone(),
            id: id.context("no Mcp-Session-Id on initialize")?,
            version,
        };
        let r = s
            .post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await?;
        if !r.status().is_success() {
            bail!("notifications/initialized: HTTP {}", r.status());
        }
        drain(r).await;
        Ok(s)
    }
}

pub struct Session {
    client: Client,
    pub id: String,
    pub version: String,
}

/// How a call was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Json,
    Sse,
}

impl Session {
    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        self.client
            .http
            .request(method, self.client.url())
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", &self.version)
    }

    pub async fn post(&self, body: &Value) -> anyhow::Result<reqwest::Response> {
        Ok(self
            .request(reqwest::Method::POST)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await?)
    }

    /// POST a `tools/call` and return the response unread.
    pub async fn start_call(
        &self,
        id: u64,
        tool: &str,
        args: &Value,
        progress: bool,
    ) -> anyhow::Result<reqwest::Response> {
        let mut params = json!({"name": tool, "arguments": args});
        if progress {
            params["_meta"] = json!({"progressToken": id});
        }
        let r = self
            .post(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params}))
            .await?;
        if r.status() != 200 {
            bail!("tools/call: HTTP {}", r.status());
        }
        Ok(r)
    }

    /// One call, its answer read and checked (a result, not an error).
    pub async fn call(
        &self,
        id: u64,
        tool: &str,
        args: &Value,
        progress: bool,
    ) -> anyhow::Result<Answer> {
        let r = self.start_call(id, tool, args, progress).await?;
        let kind = if is_sse(&r) {
            Answer::Sse
        } else {
            Answer::Json
        };
        check_result(&read_answer(r, &json!(id)).await?)?;
        Ok(kind)
    }

    /// `GET` the standalone stream, or resume one after `last_event_id`.
    pub async fn get(&self, last_event_id: Option<&str>) -> anyhow::Result<reqwest::Response> {
        let mut req = self
            .request(reqwest::Method::GET)
            .header("accept", "text/event-stream");
        if let Some(last) = last_event_id {
            req = req.header("last-event-id", last);
        }
        let r = req.send().await?;
        if r.status() != 200 {
            bail!("GET: HTTP {}", r.status());
        }
        Ok(r)
    }

    pub async fn cancel(&self, request_id: u64) -> anyhow::Result<()> {
        let r = self
            .post(&json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                "params":{"requestId": request_id, "reason":"mcpd-loadtest"}}))
            .await?;
        if !r.status().is_success() {
            bail!("notifications/cancelled: HTTP {}", r.status());
        }
        drain(r).await;
        Ok(())
    }

    pub async fn delete(&self) -> anyhow::Result<()> {
        let r = self.request(reqwest::Method::DELETE).send().await?;
        if !r.status().is_success() {
            bail!("DELETE: HTTP {}", r.status());
        }
        drain(r).await;
        Ok(())
    }
}

pub fn is_sse(r: &reqwest::Response) -> bool {
    r.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"))
}

/// Read a body to its end so the connection goes back to the pool.
pub async fn drain(mut r: reqwest::Response) {
    while let Ok(Some(_)) = r.chunk().await {}
}

/// The JSON-RPC response with `id` from a JSON or SSE answer (SSE: read
/// event by event until it comes, then the stream to its end).
pub async fn read_answer(r: reqwest::Response, id: &Value) -> anyhow::Result<Value> {
    if is_sse(&r) {
        let mut reader = sse::Reader::new(r);
        while let Some(data) = reader.next().await? {
            if let Some(m) = response_in(&data, id) {
                while reader.next().await?.is_some() {}
                return Ok(m);
            }
        }
        bail!("the SSE stream ended without a response for id {id}");
    }
    let body = r.bytes().await?;
    serde_json::from_slice(&body).with_context(|| {
        format!(
            "the answer is not JSON: {:?}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        )
    })
}

/// `data` parsed when it is a response (result or error) to `id`.
pub fn response_in(data: &str, id: &Value) -> Option<Value> {
    if data.is_empty() {
        return None;
    }
    let m: Value = serde_json::from_str(data).ok()?;
    (m.get("id") == Some(id) && (m.get("result").is_some() || m.get("error").is_some()))
        .then_some(m)
}

/// A successful result (not a JSON-RPC error, not `isError`).
pub fn check_result(m: &Value) -> anyhow::Result<()> {
    match m.get("result") {
        Some(r) if r.get("isError") != Some(&Value::Bool(true)) => Ok(()),
        _ => bail!("error answer: {m}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_found_by_id() {
        let id = json!(7);
        assert!(response_in(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, &id).is_some());
        assert!(response_in(r#"{"jsonrpc":"2.0","id":7,"error":{"code":1}}"#, &id).is_some());
        assert!(response_in(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#, &id).is_none());
        assert!(response_in(r#"{"jsonrpc":"2.0","id":"7","result":{}}"#, &id).is_none());
        assert!(response_in(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7}}"#,
            &id
        )
        .is_none());
        assert!(response_in("", &id).is_none());
        assert!(response_in("not json", &id).is_none());
    }

    #[test]
    fn results_are_checked() {
        check_result(&json!({"id":1,"result":{"content":[]}})).unwrap();
        assert!(check_result(&json!({"id":1,"result":{"isError":true}})).is_err());
        assert!(check_result(&json!({"id":1,"error":{"code":-32602}})).is_err());
    }
}
