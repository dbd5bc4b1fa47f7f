//! [`TestClient`]: a client inside the process, for a tool author's unit
//! tests — call tools, read resources, get prompts and answer the server's
//! questions, with no HTTP, no port and no configuration.
//!
//! ```
//! use mcpd::prelude::*;
//! use mcpd::testing::TestClient;
//!
//! /// Adds two numbers.
//! #[mcpd::tool]
//! async fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let client = TestClient::new(Server::new("calc", "1.0.0").tool(add()));
//! let r = client.call_tool("add", json!({"a": 2, "b": 40})).await.unwrap();
//! assert_eq!(r.content, vec![Content::text("42")]);
//! # }
//! ```
//!
//! The server runs as `mcpd` runs it (a session of the 2025-11-25 revision
//! on the memory store, the request actors, the streams), on a thread of
//! its own, so a test may use any async runtime (`#[tokio::test]`).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use mcpd_core::{Caller, PostReply, SessionHandle, StreamItem};
use mcpd_protocol::jsonrpc::Message;
use mcpd_protocol::methods as m;
use mcpd_protocol::types::{CallToolResult, GetPromptResult, ResourceContents, Tool as ToolDef};
use mcpd_protocol::ErrorObject;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use crate::server::Server;

/// Answers a question the server asks the client (`elicitation/create`,
/// `sampling/createMessage`, `roots/list`): the method and its params in,
/// the result out.
pub type Answerer = Arc<dyn Fn(&str, &Value) -> Value + Send + Sync>;

/// One request for the server's thread.
struct Job {
    id: i64,
    method: String,
    params: Value,
    reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// A client of a [`Server`] inside the process (see the module docs).
pub struct TestClient {
    jobs: mpsc::UnboundedSender<Job>,
    ids: AtomicI64,
}

impl TestClient {
    /// A session with `server`; a question the server asks is answered
    /// with a JSON-RPC error (use [`TestClient::answering`]).
    pub fn new(server: Server) -> Self {
        Self::answering(
            server,
            |method, _| json!({"error": format!("this test answers no {method}")}),
        )
    }

    /// A session with `server` whose questions `answer` answers: an
    /// elicitation with `{"action": "accept", "content": {...}}`, a
    /// sampling request with a message, `roots/list` with roots. A result
    /// `{"error": "..."}` answers with a JSON-RPC error instead.
    pub fn answering(
        server: Server,
        answer: impl Fn(&str, &Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        let answer: Answerer = Arc::new(answer);
        let (jobs, mut rx) = mpsc::unbounded_channel::<Job>();
        let (ready_tx, ready) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            actix_rt::System::new().block_on(async move {
                // The endpoint lives as long as this thread's system.
                let (session, _endpoint) = match start(&server).await {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                while let Some(job) = rx.recv().await {
                    let (session, answer) = (session.clone(), answer.clone());
                    actix_rt::spawn(async move {
                        let out = run(&session, &job, &answer).await;
                        let _ = job.reply.send(out);
                    });
                }
            });
        });
        if let Ok(Err(e)) = ready.recv() {
            panic!("the test server did not start: {e}");
        }
        Self {
            jobs,
            ids: AtomicI64::new(1),
        }
    }

    /// Any request: its result, or the JSON-RPC error it got.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let (reply, rx) = oneshot::channel();
        let job = Job {
            id: self.ids.fetch_add(1, Ordering::Relaxed),
            method: method.to_owned(),
            params,
            reply,
        };
        self.jobs
            .send(job)
            .map_err(|_| ErrorObject::internal("the test server stopped"))?;
        rx.await
            .map_err(|_| ErrorObject::internal("the test server stopped"))?
    }

    /// `tools/call`: the result (a failed call is `Ok` with `is_error`).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ErrorObject> {
        let v = self
            .request(m::TOOLS_CALL, json!({"name": name, "arguments": arguments}))
            .await?;
        parse(v)
    }

    /// `tools/list`, every page.
    pub async fn list_tools(&self) -> Result<Vec<ToolDef>, ErrorObject> {
        let mut out = Vec::new();
        let mut cursor = Value::Null;
        loop {
            let params = match &cursor {
                Value::Null => json!({}),
                c => json!({"cursor": c}),
            };
            let page = self.request(m::TOOLS_LIST, params).await?;
            let tools: Vec<ToolDef> = parse(page["tools"].clone())?;
            out.extend(tools);
            cursor = page["nextCursor"].clone();
            if cursor.is_null() {
                return Ok(out);
            }
        }
    }

    /// `resources/read`: the contents.
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContents>, ErrorObject> {
        let v = self.request(m::RESOURCES_READ, json!({"uri": uri})).await?;
        parse(v["contents"].clone())
    }

    /// `prompts/get` with `arguments` (an object of strings).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<GetPromptResult, ErrorObject> {
        let v = self
            .request(
                m::PROMPTS_GET,
                json!({"name": name, "arguments": arguments}),
            )
            .await?;
        parse(v)
    }
}

fn parse<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, ErrorObject> {
    serde_json::from_value(v).map_err(|e| ErrorObject::internal(format!("unexpected answer: {e}")))
}

/// The server's core on the memory store, and an initialized session.
async fn start(server: &Server) -> Result<(SessionHandle, crate::build::Endpoint), String> {
    use clap::Parser;
    let config = server
        .config(&crate::config::Cli::parse_from(["mcpd-test"]))
        .map_err(|e| e.to_string())?;
    let core = crate::build::build(&config, |registry| server.register(registry))
        .map_err(|e| e.to_string())?;
    let init = message(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}, "sampling": {}, "roots": {}},
        "clientInfo": {"name": "mcpd-testing", "version": env!("CARGO_PKG_VERSION")}}}),
    )?;
    let Message::Request(init) = init else {
        unreachable!("initialize is a request")
    };
    let (session, _) = core
        .node
        .lifecycle
        .initialize(init, &Caller::default())
        .await
        .map_err(|e| e.to_string())?;
    let done = message(json!({"jsonrpc": "2.0", "method": m::NOTIFICATION_INITIALIZED}))?;
    session
        .post(vec![done], false, Caller::default())
        .await
        .map_err(|e| e.to_string())?;
    Ok((session, core))
}

fn message(v: Value) -> Result<Message, String> {
    Message::from_value(v).map_err(|e| format!("{e:?}"))
}

/// One request through the session: its answer, the server's questions
/// on the way answered by `answer`.
async fn run(session: &SessionHandle, job: &Job, answer: &Answerer) -> Result<Value, ErrorObject> {
    let req = json!({"jsonrpc": "2.0", "id": job.id, "method": job.method, "params": job.params});
    let req = message(req).map_err(ErrorObject::invalid_params)?;
    let reply = session
        .post(vec![req], false, Caller::default())
        .await
        .map_err(|e| ErrorObject::internal(e.to_string()))?;
    let mut stream = match reply {
        PostReply::Json(body) => {
            return outcome(&serde_json::from_slice(&body).unwrap_or_default())
        }
        PostReply::Stream(rx) => rx,
        PostReply::Accepted => return Err(ErrorObject::internal("the request was not answered")),
    };
    while let Some(item) = stream.recv().await {
        let data = match item {
            StreamItem::Event { data, .. } | StreamItem::Json { data, .. } => data,
            StreamItem::Retry(_) => continue,
        };
        let Ok(m) = serde_json::from_slice::<Value>(&data) else {
            continue; // a priming event
        };
        if m.get("id") == Some(&json!(job.id)) && m.get("method").is_none() {
            return outcome(&m);
        }
        if let (Some(method), Some(id)) = (m["method"].as_str(), m.get("id")) {
            let result = answer(method, &m["params"]);
            let response = match result.get("error").and_then(Value::as_str) {
                Some(e) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -1, "message": e}}),
                None => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            };
            let response = message(response).map_err(ErrorObject::internal)?;
            session
                .post(vec![response], false, Caller::default())
                .await
                .map_err(|e| ErrorObject::internal(e.to_string()))?;
        }
    }
    Err(ErrorObject::internal("the stream ended without an answer"))
}

/// A response's result, or its error.
fn outcome(m: &Value) -> Result<Value, ErrorObject> {
    if let Some(e) = m.get("error") {
        return Err(parse(e.clone())?);
    }
    Ok(m["result"].clone())
}
