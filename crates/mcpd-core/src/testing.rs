//! What the unit tests of the session table, the session actor and the
//! inbox share: a [`Node`] wired as the binary wires it for the memory
//! backend (memory event log and session directory, the cluster built over
//! a local bus), a catalogue of a few tools, and a client's side of a POST.
//! Only Rust: no Redis, no network, no HTTP. `testing/recording.rs`: a
//! cluster that writes down what it would tell other replicas.

mod recording;

pub(crate) use recording::RecordingCluster;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcpd_protocol::jsonrpc::{Message, Request};
use mcpd_protocol::types::{
    CallToolResult, Implementation, LoggingLevel, Resource, ResourceContents,
};
use mcpd_protocol::ErrorObject;
use mcpd_store::{MemoryEventLog, MemorySessionDirectory};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::cluster::{self, Cluster};
use crate::session::{PostReply, SessionRecord};
use crate::{
    tool_fn, Caller, InitializeError, Limits, McpServer, Node, Registry, RequestContext,
    ResourceProvider, SessionHandle, Stats, StreamItem, StreamReceiver,
};

/// The one resource the catalogue lists.
pub(crate) const KNOWN_URI: &str = "demo://known";

/// What the `wait` tool tells the test: that it started, and that its
/// future was dropped (the request was cancelled).
#[derive(Default)]
pub(crate) struct Probe {
    pub started: Notify,
    pub dropped: AtomicUsize,
}

impl Probe {
    pub fn dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }
}

/// Counts the drop of the future that holds it.
struct DropFlag(Arc<Probe>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

pub(crate) struct Harness {
    pub node: Arc<Node>,
    /// The node's session directory, read back by the tests.
    pub directory: Arc<MemorySessionDirectory>,
    pub probe: Arc<Probe>,
}

/// A node on the memory backend with the local cluster, as the binary
/// builds it without Redis.
pub(crate) fn harness(limits: Limits) -> Harness {
    let cluster = Arc::new(cluster::Local::new(crate::new_replica_id()));
    harness_with(limits, cluster)
}

/// A node on the memory backend with `cluster`.
pub(crate) fn harness_with(limits: Limits, cluster: Arc<dyn Cluster>) -> Harness {
    let probe = Arc::new(Probe::default());
    let server = Arc::new(McpServer::new(
        Implementation {
            name: "unit".into(),
            version: "0".into(),
            title: None,
        },
        catalogue(probe.clone()),
        limits,
    ));
    let directory = Arc::new(MemorySessionDirectory::default());
    let node = Node::new(
        server,
        Arc::new(MemoryEventLog::default()),
        directory.clone(),
        cluster,
        Arc::new(Stats::default()),
    );
    Harness {
        node,
        directory,
        probe,
    }
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    message: String,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// `echo` answers at once; `wait` runs until cancelled; `warn` logs a
/// warning and answers; `roots` asks the client for its roots and answers
/// with the first one's URI.
fn catalogue(probe: Arc<Probe>) -> Registry {
    let registry = Registry::new(50);
    registry.add_tool(Arc::new(tool_fn(
        "echo",
        "Returns its message.",
        |a: EchoArgs, _ctx| async move { Ok(CallToolResult::text(a.message)) },
    )));
    registry.add_tool(Arc::new(tool_fn(
        "wait",
        "Runs until cancelled.",
        move |_: NoArgs, _ctx| {
            let probe = probe.clone();
            async move {
                let _flag = DropFlag(probe.clone());
                probe.started.notify_one();
                std::future::pending::<()>().await;
                Ok(CallToolResult::text("never"))
            }
        },
    )));
    registry.add_tool(Arc::new(tool_fn(
        "warn",
        "Logs a warning.",
        |_: NoArgs, ctx: RequestContext| async move {
            ctx.log(LoggingLevel::Warning, "careful").await?;
            Ok(CallToolResult::text("logged"))
        },
    )));
    registry.add_tool(Arc::new(tool_fn(
        "roots",
        "Answers with the client's first root.",
        |_: NoArgs, ctx: RequestContext| async move {
            let roots = ctx.list_roots().await?;
            let first = roots.roots.first().map_or("none", |r| r.uri.as_str());
            Ok(CallToolResult::text(first))
        },
    )));
    registry.add_resources(Arc::new(OneResource));
    registry
}

struct OneResource;

#[async_trait]
impl ResourceProvider for OneResource {
    async fn list(&self) -> Vec<Resource> {
        vec![Resource {
            uri: KNOWN_URI.into(),
            name: "known".into(),
            title: None,
            description: None,
            mime_type: None,
        }]
    }

    async fn read(
        &self,
        uri: &str,
        _ctx: &RequestContext,
    ) -> Result<Option<Vec<ResourceContents>>, ErrorObject> {
        Ok((uri == KNOWN_URI).then(|| vec![ResourceContents::text(uri, "text/plain", "hi")]))
    }
}

/// An `initialize` request asking for `version`, with the `roots`
/// capability.
pub(crate) fn initialize_request(version: &str) -> Request {
    let params = json!({
        "protocolVersion": version,
        "capabilities": {"roots": {}},
        "clientInfo": {"name": "unit-client", "version": "1"},
    });
    match message(request(0, "initialize", params)) {
        Message::Request(r) => r,
        other => panic!("not a request: {other:?}"),
    }
}

/// The caller a session of client `client` is created by.
pub(crate) fn client(client: &str) -> Caller {
    Caller {
        client: Some(Arc::from(client)),
        ..Caller::default()
    }
}

impl Harness {
    /// `initialize` at `version` for `client`: the session and the result.
    pub async fn initialize(
        &self,
        version: &str,
        client_key: &str,
    ) -> Result<(SessionHandle, Value), InitializeError> {
        let (h, raw) = self
            .node
            .lifecycle
            .initialize(initialize_request(version), &client(client_key))
            .await?;
        let result = serde_json::from_str(raw.get()).expect("the result is JSON");
        Ok((h, result))
    }

    /// A new session at the latest revision.
    pub async fn session(&self) -> SessionHandle {
        self.initialize("2025-11-25", "c")
            .await
            .expect("initialize succeeds")
            .0
    }

    /// The record the directory holds for `session`.
    pub async fn record(&self, session: &str) -> Option<SessionRecord> {
        use mcpd_store::SessionDirectory;
        let bytes = self
            .directory
            .get(&session.into())
            .await
            .expect("memory store")?;
        Some(SessionRecord::from_bytes(&bytes).expect("a readable record"))
    }

    /// The rendered metrics, as `/metrics` shows them.
    pub fn metrics(&self) -> String {
        self.node.server.metrics.render()
    }
}

pub(crate) fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub(crate) fn call(id: i64, tool: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

pub(crate) fn cancelled(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
}

pub(crate) fn message(v: Value) -> Message {
    Message::from_value(v).expect("a JSON-RPC message")
}

/// `f`, which must be done within five seconds (a broken behaviour fails
/// the test instead of hanging it).
pub(crate) async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(5), f)
        .await
        .expect("done within 5 s")
}

/// One POST of `messages` (not a batch) to the session.
pub(crate) async fn post(h: &SessionHandle, messages: Vec<Value>) -> PostReply {
    let messages = messages.into_iter().map(message).collect();
    within(h.post(messages, false, Caller::default()))
        .await
        .expect("the session takes the POST")
}

/// Polls `done` until it holds (at most five seconds).
pub(crate) async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The JSON body of a reply answered without streaming.
pub(crate) fn json_body(reply: PostReply) -> Value {
    match reply {
        PostReply::Json(b) => serde_json::from_slice(&b).expect("a JSON body"),
        other => panic!("expected a JSON body, got {other:?}"),
    }
}

/// The JSON-RPC error code of a JSON answer.
pub(crate) fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

/// The SSE stream of a reply that streamed.
pub(crate) fn sse(reply: PostReply) -> StreamReceiver {
    match reply {
        PostReply::Stream(rx) => rx,
        other => panic!("expected an SSE stream, got {other:?}"),
    }
}

/// The next message on an SSE stream (priming events, which carry no
/// data, skipped); `None` when the stream ended.
pub(crate) async fn next_message(rx: &mut StreamReceiver) -> Option<Value> {
    loop {
        match within(rx.recv()).await? {
            StreamItem::Event { data, .. } if data.is_empty() => continue,
            StreamItem::Event { data, .. } => {
                return Some(serde_json::from_slice(&data).expect("an event holds JSON"))
            }
            other => panic!("unexpected on an SSE stream: {other:?}"),
        }
    }
}

/// Every message of an SSE reply, in order, until the stream ends.
pub(crate) async fn sse_messages(reply: PostReply) -> Vec<Value> {
    let mut rx = sse(reply);
    let mut out = Vec::new();
    while let Some(m) = next_message(&mut rx).await {
        out.push(m);
    }
    out
}
