//! A raw Streamable HTTP MCP client for tests.

use std::time::Duration;

use mcpd_protocol::methods;
use reqwest::header::{HeaderMap, CONTENT_TYPE};
use serde_json::{json, Value};

use crate::sse::{SseEvent, SseStream};

pub const INIT_VERSION: &str = "2025-11-25";

/// What one POST got back, fully read.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    /// `application/json` body, if that is what came back.
    pub json: Option<Value>,
    /// SSE events, if the answer was a stream (read to its end).
    pub events: Vec<SseEvent>,
    pub body: String,
}

impl Reply {
    pub fn content_type(&self) -> &str {
        self.headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Every JSON-RPC message received (the JSON body or each SSE `data`).
    pub fn messages(&self) -> Vec<Value> {
        match &self.json {
            Some(Value::Array(a)) => a.clone(),
            Some(v) => vec![v.clone()],
            None => self.events.iter().filter_map(SseEvent::json).collect(),
        }
    }

    /// The response (a message with `result` or `error`) with this id.
    pub fn response(&self, id: &Value) -> Option<Value> {
        self.messages().into_iter().find(|m| {
            m.get("id") == Some(id) && (m.get("result").is_some() || m.get("error").is_some())
        })
    }

    /// The last message (usually the response).
    pub fn last(&self) -> Value {
        self.messages().pop().unwrap_or(Value::Null)
    }
}

#[derive(Clone)]
pub struct McpClient {
    pub http: reqwest::Client,
    pub url: String,
    pub session: Option<String>,
    pub version: Option<String>,
    next_id: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

impl McpClient {
    pub fn new(url: &str) -> Self {
        Self {
            http: reqwest::Client::builder().build().expect("client"),
            url: url.to_owned(),
            session: None,
            version: None,
            next_id: Default::default(),
        }
    }

    pub fn next_id(&self) -> i64 {
        self.next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1
    }

    /// A POST with the standard headers (Accept, Content-Type, session and
    /// version when known), before sending.
    pub fn post_builder(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut b = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
        }
        if let Some(v) = &self.version {
            b = b.header("mcp-protocol-version", v);
        }
        b
    }

    /// Sends and reads the whole reply (an SSE answer is read to its end).
    pub async fn send(&self, b: reqwest::RequestBuilder) -> Reply {
        let resp = b.send().await.expect("request sent");
        read_reply(resp).await
    }

    pub async fn post(&self, body: &Value) -> Reply {
        self.send(self.post_builder(body)).await
    }

    /// `initialize` at `version`, then `notifications/initialized`; keeps the
    /// session id and version.
    pub async fn initialize_with(&mut self, version: &str, capabilities: Value) -> Value {
        let body = json!({"jsonrpc":"2.0","id":0,"method":methods::INITIALIZE,"params":{
            "protocolVersion": version, "capabilities": capabilities,
            "clientInfo": {"name":"mcpd-testkit","version":"1"}}});
        let r = self.post(&body).await;
        assert_eq!(r.status, 200, "initialize failed: {r:?}");
        self.session = r
            .headers
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let result = r.last()["result"].clone();
        self.version = result["protocolVersion"].as_str().map(str::to_owned);
        let n = self
            .notify(methods::NOTIFICATION_INITIALIZED, json!({}))
            .await;
        assert_eq!(n.status, 202);
        result
    }

    /// `initialize` at 2025-11-25 with sampling, elicitation and roots.
    pub async fn initialize(&mut self) -> Value {
        self.initialize_with(
            INIT_VERSION,
            json!({"sampling":{}, "elicitation":{}, "roots":{}}),
        )
        .await
    }

    pub async fn notify(&self, method: &str, params: Value) -> Reply {
        self.post(&json!({"jsonrpc":"2.0","method":method,"params":params}))
            .await
    }

    /// A request; returns the whole reply.
    pub async fn request(&self, method: &str, params: Value) -> Reply {
        let id = self.next_id();
        self.post(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await
    }

    /// A request whose `result` is returned (panics on an error response).
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let r = self.request(method, params).await;
        let last = r.last();
        assert!(last.get("result").is_some(), "{method} failed: {last}");
        last["result"].clone()
    }

    /// Sends a request and returns status, headers and the live SSE stream,
    /// unread, so a test can read events one by one or drop the connection.
    pub async fn request_stream(
        &self,
        id: i64,
        method: &str,
        params: Value,
    ) -> (u16, HeaderMap, SseStream) {
        let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
        let resp = self.post_builder(&body).send().await.expect("sent");
        (
            resp.status().as_u16(),
            resp.headers().clone(),
            SseStream::new(resp),
        )
    }

    /// `GET` on the endpoint (standalone stream or resumption).
    pub async fn get(&self, last_event_id: Option<&str>) -> reqwest::Response {
        let mut b = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream");
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
        }
        if let Some(v) = &self.version {
            b = b.header("mcp-protocol-version", v);
        }
        if let Some(id) = last_event_id {
            b = b.header("last-event-id", id);
        }
        b.send().await.expect("GET sent")
    }

    pub async fn delete(&self) -> reqwest::Response {
        let mut b = self.http.delete(&self.url);
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
        }
        if let Some(v) = &self.version {
            b = b.header("mcp-protocol-version", v);
        }
        b.send().await.expect("DELETE sent")
    }
}

async fn read_reply(resp: reqwest::Response) -> Reply {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let ct = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if ct.starts_with("text/event-stream") {
        let mut s = SseStream::new(resp);
        let events = s.collect_all(Duration::from_secs(30)).await;
        return Reply {
            status,
            headers,
            json: None,
            events,
            body: String::new(),
        };
    }
    let body = resp.text().await.unwrap_or_default();
    let json = serde_json::from_str(&body).ok();
    Reply {
        status,
        headers,
        json,
        events: Vec::new(),
        body,
    }
}
