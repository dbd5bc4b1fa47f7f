//! One upstream as the core sees it: a [`Forward`] that picks the right
//! connection actor (the shared one, or the downstream session's own) and
//! relays a request through it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use actix::prelude::*;
use async_trait::async_trait;
use dashmap::DashMap;
use mcpd_core::{Forward, RequestContext};
use mcpd_protocol::types::{JsonObject, Tool as ToolDef};
use mcpd_protocol::{methods, ErrorCode, ErrorObject, Method};
use serde_json::Value;

use tracing::Instrument;

use crate::config::{Protocol, Share, UpstreamConfig};
use crate::link::wire::{
    header_value, meta_mut, OUTBOUND_HEADERS_KEY, PARAM_HEADERS_KEY, PASS_TASKS_KEY,
};
use crate::pool::Pool;
use crate::trace;
use crate::upstream::{self, Event, EventSink, Health, Stop, UpstreamActor};

/// The 2026-07-28 per-request `_meta` keys of the client's own request.
const ENVELOPE: [&str; 4] = [
    methods::meta::PROTOCOL_VERSION,
    methods::meta::CLIENT_CAPABILITIES,
    methods::meta::CLIENT_INFO,
    methods::meta::LOG_LEVEL,
];

pub struct Upstream {
    cfg: Arc<UpstreamConfig>,
    /// The shared connection (with `share = "session"`: the one used for
    /// the catalogue and for sessionless, 2026-07-28 requests).
    shared: Addr<UpstreamActor>,
    /// `share = "session"`: each downstream session's own connection.
    sessions: DashMap<String, Addr<UpstreamActor>>,
    sinks: Arc<RwLock<Vec<EventSink>>>,
    /// `mcp.client.operation.duration` of every request sent.
    metrics: Arc<mcpd_telemetry::Metrics>,
    /// Up or not, restarts, requests in flight; readiness reads it.
    health: Arc<Health>,
    /// A shared stdio upstream: its children, so that a question reaches
    /// the call that asked (`pool.rs`); `None` for the others.
    pool: Option<Pool>,
    /// Its tools as it last listed them (at each connection and list
    /// change): the HTTP front checks `Mcp-Param-*` headers against them,
    /// and a 2026-07-28 link sends them.
    tools: RwLock<HashMap<String, ToolDef>>,
    /// The latest listing of `tools` started.
    listing: AtomicU64,
    /// The upstream offers the Tasks extension (seen at its handshake).
    offers_tasks: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("id", &self.cfg.id)
            .finish()
    }
}

impl Upstream {
    /// Starts the shared connection (it connects at once, and again after
    /// a crash). Must run inside an actix system.
    pub fn start(cfg: UpstreamConfig, metrics: Arc<mcpd_telemetry::Metrics>) -> Arc<Self> {
        let cfg = Arc::new(cfg);
        let sinks: Arc<RwLock<Vec<EventSink>>> = Arc::default();
        let health = Arc::new(Health::new(&cfg, &metrics));
        let shared = UpstreamActor::new(cfg.clone(), fan_out(&sinks), health.clone(), true).start();
        // Every session-era stdio upstream's shared connection: with
        // `share = "session"` it still serves the calls of no session. (A
        // 2026-07-28 one's questions come back on their own call.)
        let pool = (cfg.url.is_empty() && cfg.protocol == Protocol::Session)
            .then(|| Pool::new(shared.clone(), cfg.pool_size));
        let up = Arc::new(Self {
            cfg,
            shared,
            sessions: DashMap::new(),
            sinks,
            metrics,
            health,
            pool,
            tools: RwLock::default(),
            listing: AtomicU64::new(0),
            offers_tasks: Default::default(),
        });
        let weak = Arc::downgrade(&up);
        up.on_event(Arc::new(move |_, e| {
            let relist = match e {
                Event::Connected => true,
                Event::Notification(m, _) => m == methods::NOTIFICATION_TOOLS_LIST_CHANGED,
            };
            if let (true, Some(up)) = (relist, weak.upgrade()) {
                actix::spawn(async move { up.list_tools().await });
            }
        }));
        up
    }

    /// Reads the upstream's tools (every page) into [`Self::tools`].
    async fn list_tools(&self) {
        let generation = self.listing.fetch_add(1, Ordering::AcqRel) + 1;
        // Listed at each connection: whether it offers Tasks may change too.
        if let Ok(init) = upstream::handshake(&self.shared, &self.cfg.id).await {
            let offers = init
                .pointer("/capabilities/extensions")
                .and_then(|e| e.get(methods::TASKS_EXTENSION))
                .is_some();
            self.offers_tasks.store(offers, Ordering::Release);
        }
        let mut all = HashMap::new();
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let mut params = JsonObject::new();
            if let Some(c) = cursor.take() {
                params.insert("cursor".into(), Value::from(c));
            }
            let Ok(v) = self.call(methods::TOOLS_LIST, Some(params), None).await else {
                return;
            };
            // Tool by tool: one the types cannot read does not hide the rest.
            let tools = v
                .get("tools")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            all.extend(
                tools
                    .into_iter()
                    .filter_map(|t| serde_json::from_value::<ToolDef>(t).ok())
                    .map(|t| (t.name.clone(), t)),
            );
            match v.get("nextCursor").and_then(Value::as_str) {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        // Only the latest listing is kept (two may overlap).
        if self.listing.load(Ordering::Acquire) == generation {
            *self.tools.write().unwrap_or_else(|p| p.into_inner()) = all;
        }
    }

    /// The `Mcp-Param-*` headers (name → value) a call of `params` needs,
    /// from its tool's schema (`x-mcp-header` properties with a value).
    fn param_headers(&self, params: &JsonObject) -> Vec<(String, Value)> {
        let (Some(name), Some(args)) = (
            params.get("name").and_then(Value::as_str),
            params.get("arguments").and_then(Value::as_object),
        ) else {
            return Vec::new();
        };
        let tools = self.tools.read().unwrap_or_else(|p| p.into_inner());
        let Some(Value::Object(props)) = tools
            .get(name)
            .and_then(|t| t.input_schema.get("properties"))
        else {
            return Vec::new();
        };
        props
            .iter()
            .filter_map(|(prop, schema)| {
                let header = schema.get("x-mcp-header")?.as_str()?;
                let value = args.get(prop).filter(|v| !v.is_null())?;
                Some((header.to_owned(), value.clone()))
            })
            .collect()
    }

    pub fn id(&self) -> &str {
        &self.cfg.id
    }

    pub fn config(&self) -> &UpstreamConfig {
        &self.cfg
    }

    /// Hears the upstream's notifications that belong to no request
    /// (list changes, resource updates) and its (re)connections.
    pub fn on_event(&self, sink: EventSink) {
        self.sinks
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(sink);
    }

    fn actor_for(
        &self,
        session: Option<&str>,
        caller: Option<&mcpd_core::Caller>,
    ) -> Result<Addr<UpstreamActor>, ErrorObject> {
        let session = match (self.cfg.share, session) {
            (Share::Session, Some(s)) => s,
            _ => return Ok(self.shared.clone()),
        };
        if let Some(a) = self.sessions.get(session) {
            return Ok(a.clone());
        }
        if self.sessions.len() >= self.cfg.max_sessions {
            return Err(ErrorObject::new(
                ErrorCode::OVERLOADED,
                format!(
                    "Upstream server '{}' has {} sessions open (its max_sessions); retry later",
                    self.cfg.id, self.cfg.max_sessions
                ),
            )
            .with_data(serde_json::json!({"retryAfterMs": 1000})));
        }
        let addr = self
            .sessions
            .entry(session.to_owned())
            .or_insert_with(|| {
                // A session's own child announcing list changes as it starts
                // is not news for every session: only resource updates go on
                // (the catalogue follows the shared connection).
                // The session's connection is its caller's: with the caller's
                // token exchanged or passed, all its requests carry it.
                let cfg = match (&self.cfg.auth, caller) {
                    (Some(auth), Some(caller)) if auth.needs_caller_token() => {
                        let mut cfg = (*self.cfg).clone();
                        cfg.auth = Some(auth.bound_to(caller));
                        Arc::new(cfg)
                    }
                    _ => self.cfg.clone(),
                };
                UpstreamActor::new(cfg, self.quiet_sink(), self.health.clone(), false).start()
            })
            .clone();
        Ok(addr)
    }

    /// What a connection other than the shared one reports: its own
    /// start announcing list changes is not news for every session (the
    /// catalogue follows the shared connection); resource updates go on.
    fn quiet_sink(&self) -> EventSink {
        let all = fan_out(&self.sinks);
        Arc::new(move |id: &str, e: &Event| match e {
            Event::Notification(m, _) if m == methods::NOTIFICATION_RESOURCE_UPDATED => all(id, e),
            _ => {}
        })
    }

    /// Relays one request (no downstream request context: nothing the
    /// upstream sends meanwhile is relayed).
    pub async fn call(
        &self,
        method: &str,
        params: Option<JsonObject>,
        ctx: Option<RequestContext>,
    ) -> Result<Value, ErrorObject> {
        let session = ctx.as_ref().and_then(|c| c.session_id().map(str::to_owned));
        let may_ask = Method::parse(method).is_some_and(|m| m.info().may_ask);
        // The `Mcp-Param-*` headers a 2026-07-28 link sends with the call
        // (a link of the session era is never given them).
        let mut params = params;
        if method == methods::TOOLS_CALL && self.cfg.protocol != Protocol::Session {
            if let Some(p) = params.as_mut() {
                let headers = self.param_headers(p);
                if !headers.is_empty() {
                    if let Some(meta) = meta_mut(p) {
                        let h: JsonObject = headers.into_iter().collect();
                        meta.insert(PARAM_HEADERS_KEY.into(), Value::Object(h));
                    }
                }
            }
        }
        // The call's own headers: the caller's tenant, and the caller's
        // token exchanged or passed on (`[upstream.credentials]`).
        // (A child has no headers.)
        let mut own = JsonObject::new();
        if let Some(c) = ctx.as_ref().filter(|_| !self.cfg.url.is_empty()) {
            if let (Some(name), Some(tenant)) = (&self.cfg.tenant_header, &c.caller().tenant) {
                // A tenant that is not visible ASCII goes as `=?base64?…?=`.
                own.insert(name.clone(), Value::from(header_value(tenant)));
            }
            if let Some(creds) = &self.cfg.auth {
                let header = creds.for_call(c.caller()).await.map_err(|why| {
                    ErrorObject::new(
                        ErrorCode::SERVER_ERROR,
                        format!("Upstream server '{}': {why}", self.cfg.id),
                    )
                })?;
                if let Some((name, value)) = header {
                    own.insert(name, Value::from(value));
                }
            }
        }
        if !own.is_empty() {
            if let Some(meta) = meta_mut(params.get_or_insert_with(JsonObject::new)) {
                meta.insert(OUTBOUND_HEADERS_KEY.into(), Value::Object(own));
            }
        }
        // The client's Tasks declaration goes upstream only to an upstream
        // that runs its own tasks, for a call that is not one of mcpd's.
        let pass_tasks = self.own_tasks() && ctx.as_ref().is_some_and(|c| c.task_id().is_none());
        if pass_tasks {
            if let Some(meta) = meta_mut(params.get_or_insert_with(JsonObject::new)) {
                meta.insert(PASS_TASKS_KEY.into(), Value::Bool(true));
            }
        }
        let pooled = self.cfg.share == Share::Shared || session.is_none();
        let mut lease = match &self.pool {
            Some(pool) if may_ask && pooled => Some(
                pool.lease(&self.cfg.id, || {
                    let sink = self.quiet_sink();
                    UpstreamActor::new(self.cfg.clone(), sink, self.health.clone(), false).start()
                })
                .await?,
            ),
            _ => None,
        };
        let addr = match &lease {
            Some(l) => l.addr.clone(),
            None => self.actor_for(session.as_deref(), ctx.as_ref().map(|c| c.caller()))?,
        };
        let span = trace::client_span(&self.cfg.id, method, params.as_ref());
        let params = trace::carry_context(params, &span);
        let started = std::time::Instant::now();
        let _in_flight = self.health.request();
        let answer = upstream::call(
            &addr,
            &self.cfg.id,
            method,
            params,
            ctx,
            self.cfg.request_timeout(),
        )
        .instrument(span.clone())
        .await;
        let timed_out = matches!(&answer, Err(e) if e.code == ErrorCode::REQUEST_TIMEOUT);
        if let (Some(lease), false) = (lease.as_mut(), timed_out) {
            lease.answered();
        }
        let error_type = trace::error_type(&answer);
        trace::record(&span, &answer, error_type.as_deref());
        self.metrics
            .client_operation_duration
            .with_label_values(&[
                mcpd_telemetry::Metrics::method_label(method),
                &self.cfg.id,
                error_type.as_deref().unwrap_or(""),
            ])
            .observe(started.elapsed().as_secs_f64());
        answer
    }
}

fn fan_out(sinks: &Arc<RwLock<Vec<EventSink>>>) -> EventSink {
    let sinks = sinks.clone();
    Arc::new(move |id: &str, e: &Event| {
        let list = sinks.read().unwrap_or_else(|p| p.into_inner()).clone();
        for s in list {
            s(id, e);
        }
    })
}

#[async_trait]
impl Forward for Upstream {
    async fn handshake(
        &self,
        session: Option<&str>,
        caller: Option<&mcpd_core::Caller>,
    ) -> Result<Value, ErrorObject> {
        let addr = self.actor_for(session, caller)?;
        upstream::handshake(&addr, &self.cfg.id).await
    }

    async fn request(
        &self,
        method: &str,
        params: Option<JsonObject>,
        ctx: RequestContext,
    ) -> Result<Value, ErrorObject> {
        if method == methods::INITIALIZE {
            return Err(ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "initialize cannot be routed to '{}': mcpd runs the upstream's handshake itself",
                    self.cfg.id
                ),
            ));
        }
        // A 2026-07-28 client's `requestState` and `inputResponses` are
        // mcpd's own (its core opened and answered them): never the
        // upstream's, which gets its own from its link.
        // (A `tasks/update`'s `inputResponses` are the upstream task's own.)
        let own = method.starts_with("tasks/");
        let params = params.map(|mut p| {
            if !own {
                p.remove("requestState");
                p.remove("inputResponses");
            }
            // The keys mcpd passes its links are its own, never a client's;
            // so is a 2026-07-28 envelope: each link speaks its upstream's
            // revision (a session-era one refuses a 2026-07-28 `_meta`).
            if let Some(Value::Object(meta)) = p.get_mut("_meta") {
                meta.retain(|k, _| !k.starts_with("mcpd/") && !ENVELOPE.contains(&k.as_str()));
            }
            p
        });
        self.call(method, params, Some(ctx)).await
    }

    fn unready(&self) -> Option<String> {
        self.health.unready()
    }

    fn id(&self) -> &str {
        &self.cfg.id
    }

    fn own_tasks(&self) -> bool {
        self.cfg.tasks && self.offers_tasks.load(Ordering::Acquire)
    }

    /// Any of its tools may be a task in mcpd's store (`tasks`, default
    /// on), on every way in — unless the upstream runs its own.
    fn task_policy(&self, _name: &str) -> mcpd_core::handler::TaskPolicy {
        match self.cfg.tasks && !self.own_tasks() {
            true => mcpd_core::handler::TaskPolicy::OPTIONAL,
            false => mcpd_core::handler::TaskPolicy::FORBIDDEN,
        }
    }

    fn tool(&self, name: &str) -> Option<ToolDef> {
        let tools = self.tools.read().unwrap_or_else(|p| p.into_inner());
        tools.get(name).cloned()
    }

    fn session_ended(&self, session: &str) {
        if let Some((_, addr)) = self.sessions.remove(session) {
            // Stopping the actor drops its link, which ends the child.
            addr.do_send(Stop);
        }
    }
}
