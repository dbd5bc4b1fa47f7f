//! SSE on the way to the client: a tool's progress arrives well before its
//! result (nothing buffers), a quiet stream stays open (no idle timeout
//! shorter than the keep-alive), and a dropped stream resumes with
//! `Last-Event-ID`.
//!
//! Progress and resumption use mcpd's demo tool `countdown` (progress every
//! `interval_ms`); on a server without it they are skipped, with the reason.

use std::time::{Duration, Instant};

use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::methods;
use mcpd_protocol::types::{CallToolParams, JsonObject, ListToolsResult};
use mcpd_protocol::Message;
use serde_json::json;

use super::client::{
    initialize, is_sse, secs, send, Conn, Ending, Era, Http, Item, Mcp, Reply, SseReader,
};
use super::report::Finding;

/// The buffering probe: three progress steps 1.5 s apart, so the result
/// comes ~3 s after the first progress.
const STEPS: u64 = 3;
const INTERVAL_MS: u64 = 1500;
/// Unbuffered when the first progress leads the result by at least this
/// (half the nominal lead: a slow machine is not a buffering proxy).
const MIN_LEAD: Duration = Duration::from_millis(1500);
/// What to do about a proxy that buffers responses.
const FIX_BUFFERING: &str = "turn response buffering off for this route (nginx: proxy_buffering off, proxy_http_version 1.1, and do not ignore mcpd's X-Accel-Buffering: no; ingress-nginx: the chart's ingress.controller: nginx sets it; a CDN: no buffering for text/event-stream)";
/// A close this soon after a retry hint is the server's.
const HINT_BEFORE_CLOSE: Duration = Duration::from_secs(1);
/// A stream idle this long without a keep-alive is worth a warning.
const KEEP_ALIVE_EXPECTED_SECS: u64 = 30;

/// The tool the stream checks call: mcpd's demo `countdown`, or the one
/// `--stream-tool` names.
pub struct StreamTool {
    name: String,
    /// `None`: the countdown's, chosen per check.
    args: Option<JsonObject>,
}

impl StreamTool {
    /// A call with a progress token: the countdown with `steps` every
    /// `interval_ms`, or the named tool with its own arguments.
    fn call(&self, mcp: &Mcp<'_>, steps: u64, interval_ms: u64) -> Request {
        let args = match &self.args {
            Some(a) => a.clone(),
            None => json!({"steps": steps, "interval_ms": interval_ms})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        let call = CallToolParams {
            name: self.name.clone(),
            arguments: Some(args),
        };
        let mut params = match serde_json::to_value(call) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => JsonObject::new(),
        };
        params.insert("_meta".into(), json!({"progressToken": "mcpd-doctor"}));
        mcp.request(methods::TOOLS_CALL, params)
    }

    fn is_countdown(&self) -> bool {
        self.args.is_none()
    }
}

/// The tool for the stream checks: `named` (with `args`, a JSON object)
/// when it is listed, else mcpd's demo `countdown` when listed (with its
/// arguments); `None` when neither; `Err` when the list or `args` fail.
pub async fn stream_tool(
    mcp: &Mcp<'_>,
    named: Option<&str>,
    args: Option<&str>,
) -> Result<Option<StreamTool>, String> {
    let args = match args {
        None => JsonObject::new(),
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => return Err(format!("--stream-args {text:?} is not a JSON object")),
        },
    };
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let mut params = JsonObject::new();
        if let Some(c) = cursor.take() {
            params.insert("cursor".into(), json!(c));
        }
        let reply = mcp
            .call(methods::TOOLS_LIST, params)
            .await
            .map_err(|e| format!("{e:#}"))?;
        let list: ListToolsResult = match reply.outcome() {
            Some(Ok(v)) => serde_json::from_value(v.clone()).map_err(|e| e.to_string())?,
            _ => {
                return Err(format!(
                    "tools/list answered {}: {}",
                    reply.status.as_u16(),
                    reply.said()
                ))
            }
        };
        let found = list.tools.iter().find_map(|t| match named {
            Some(n) if t.name == n => Some(StreamTool {
                name: n.to_owned(),
                args: Some(args.clone()),
            }),
            Some(_) => None,
            None => {
                let props = t.input_schema.get("properties");
                let countdown = t.name == "countdown"
                    && props.is_some_and(|p| {
                        p.get("steps").is_some() && p.get("interval_ms").is_some()
                    });
                countdown.then(|| StreamTool {
                    name: "countdown".into(),
                    args: None,
                })
            }
        });
        if found.is_some() {
            return Ok(found);
        }
        match list.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    match named {
        Some(n) => Err(format!("--stream-tool {n:?} is not in tools/list")),
        None => Ok(None),
    }
}

/// `sse.unbuffered`: when the first progress and the result arrive.
pub async fn unbuffered(mcp: &Mcp<'_>, tool: &StreamTool) -> Finding {
    const ID: &str = "sse.unbuffered";
    let name = &tool.name;
    let nominal = Duration::from_millis((STEPS - 1) * INTERVAL_MS);
    // A tool of the operator's runs as long as it runs.
    let wait = match tool.is_countdown() {
        true => Duration::from_millis(STEPS * INTERVAL_MS) + mcp.http.timeout,
        false => Duration::from_secs(60) + mcp.http.timeout,
    };
    let reply = match mcp
        .call_within(Conn::Pooled, tool.call(mcp, STEPS, INTERVAL_MS), wait)
        .await
    {
        Ok(r) => r,
        Err(e) => return Finding::fail(ID, format!("tools/call {name}: {e:#}"), "see reachable"),
    };
    if !reply.status.is_success() {
        let m = format!(
            "tools/call {name} answered {}: {}",
            reply.status.as_u16(),
            reply.said()
        );
        return Finding::fail(ID, m, "see the server's log");
    }
    let progress_at = reply.messages.iter().find_map(|(at, m)| match m {
        Message::Notification(n) if n.method == methods::NOTIFICATION_PROGRESS => Some(*at),
        _ => None,
    });
    let result_at = reply.messages.iter().find_map(|(at, m)| match m {
        Message::Response(_) => Some(*at),
        _ => None,
    });
    let (Some(result_at), Ending::Response) = (result_at, reply.ending) else {
        let m = format!("no result to tools/call {name} within {} s", wait.as_secs());
        return Finding::fail(
            ID,
            m,
            "something on the way cut or held the response stream",
        )
        .with("ending", format!("{:?}", reply.ending));
    };
    let Some(progress_at) = progress_at else {
        let how = if reply.is_sse() { "SSE" } else { "plain JSON" };
        return Finding::warn(
            ID,
            format!("the result came as {how} without progress notifications"),
            "progress needs an SSE answer: a proxy must not rewrite the response",
        );
    };
    let lead = result_at.saturating_sub(progress_at);
    let f = if lead >= MIN_LEAD {
        Finding::pass(
            ID,
            format!(
                "the first progress arrived {:.1} s before the result (at {:.1} s): SSE is not buffered on the way",
                lead.as_secs_f64(),
                progress_at.as_secs_f64()
            ),
        )
    } else {
        Finding::fail(
            ID,
            format!(
                "the first progress arrived only {:.1} s before the result ({}it came at {:.1} s, {} messages at once): something on the way buffers SSE, or {name} reports progress only at its end",
                lead.as_secs_f64(),
                match tool.is_countdown() {
                    true => format!("expected ~{:.0} s; ", nominal.as_secs_f64()),
                    false => String::new(),
                },
                progress_at.as_secs_f64(),
                reply.messages.len()
            ),
            FIX_BUFFERING,
        )
    };
    f.with("first_progress_secs", secs(progress_at))
        .with("result_secs", secs(result_at))
        .with("lead_secs", secs(lead))
        .with("headers_secs", secs(reply.head_after))
}

/// `sse.idle`: a GET stream of its own session, held `idle` long.
pub async fn idle(http: &Http, version: &str, idle: Duration) -> Finding {
    const ID: &str = "sse.idle";
    let mcp = match initialize(http, version, true).await {
        Ok((_, Some(mcp))) => mcp,
        Ok((reply, None)) => {
            let m = format!(
                "initialize for the idle stream answered {}: {}",
                reply.status.as_u16(),
                reply.said()
            );
            return Finding::fail(ID, m, "see era.session");
        }
        Err(e) => {
            return Finding::fail(
                ID,
                format!("initialize for the idle stream: {e:#}"),
                "see reachable",
            )
        }
    };
    let f = hold(&mcp, idle).await;
    mcp.close().await;
    f
}

async fn hold(mcp: &Mcp<'_>, idle: Duration) -> Finding {
    const ID: &str = "sse.idle";
    let start = Instant::now();
    let resp = match mcp.get(None).await {
        Ok(r) => r,
        Err(e) => {
            // A buffering proxy holds even the head of a stream without data.
            let m = format!("GET for the session's stream: {e:#}: something on the way holds the response until it has data (buffering)");
            return Finding::fail(ID, m, FIX_BUFFERING);
        }
    };
    let status = resp.status().as_u16();
    if status == 405 {
        return Finding::skip(
            ID,
            "the server offers no GET stream (405): no idle stream to hold",
        );
    }
    let sse = is_sse(resp.headers());
    if status != 200 || !sse {
        let m = format!("GET for the session's stream answered {status}, not an SSE stream");
        return Finding::fail(
            ID,
            m,
            "a proxy must pass GET with Accept: text/event-stream through to the server",
        );
    }
    let mut reader = SseReader::new(resp);
    // `data`: messages and keep-alives (a priming event is neither);
    // `hint`: when the last retry hint came.
    let (mut last_data, mut data, mut keep_alives) = (start, false, 0u32);
    let mut hint: Option<Instant> = None;
    let deadline = start + idle;
    loop {
        match reader.next(deadline).await {
            Item::Event(e) => {
                if e.retry.is_some() {
                    hint = Some(Instant::now());
                }
                if e.data.as_deref().is_some_and(|d| !d.is_empty()) {
                    data = true;
                    last_data = Instant::now();
                }
            }
            Item::Comment => {
                keep_alives += 1;
                data = true;
                last_data = Instant::now();
            }
            Item::TimedOut => break,
            // A server that ends a stream to be polled sends its retry
            // hint right before; a proxy's timeout comes after a quiet spell.
            Item::End if hint.is_some_and(|h| h.elapsed() < HINT_BEFORE_CLOSE) => {
                let m = format!(
                    "the server closed the stream after {:.0} s with a retry hint (polling)",
                    start.elapsed().as_secs_f64()
                );
                return Finding::pass(ID, m).with("closed_after_secs", secs(start.elapsed()));
            }
            Item::End => {
                let closed = start.elapsed();
                let quiet = last_data.elapsed();
                let what = if !data {
                    format!(
                        "the stream was closed after ~{:.0} s with no data",
                        closed.as_secs_f64()
                    )
                } else {
                    format!(
                        "the stream was closed after ~{:.0} s, ~{:.0} s after its last data",
                        closed.as_secs_f64(),
                        quiet.as_secs_f64()
                    )
                };
                return Finding::fail(
                    ID,
                    format!("{what}: a proxy idle timeout (e.g. nginx proxy_read_timeout) shorter than mcpd's keep-alive interval (http.keep_alive_secs, 15 s by default)"),
                    "raise the proxy's read/idle timeout well above http.keep_alive_secs (nginx: proxy_read_timeout 3600s; the chart sets it for ingress-nginx), or lower http.keep_alive_secs below the proxy's timeout",
                )
                .with("closed_after_secs", secs(closed))
                .with("quiet_secs", secs(quiet))
                .with("keep_alives", keep_alives);
            }
        }
    }
    let held = idle.as_secs();
    let f = if keep_alives == 0 && held >= KEEP_ALIVE_EXPECTED_SECS {
        Finding::warn(
            ID,
            format!("the GET stream stayed open for {held} s but carried no keep-alive"),
            "send SSE keep-alive comments (mcpd: http.keep_alive_secs) so proxies keep quiet streams",
        )
    } else {
        Finding::pass(
            ID,
            format!("the GET stream stayed open for {held} s ({keep_alives} keep-alives)"),
        )
    };
    f.with("held_secs", held).with("keep_alives", keep_alives)
}

/// `sse.resume`: the stream tool's answer dropped after its first event,
/// then resumed with `GET` + `Last-Event-ID`.
pub async fn resume(mcp: &Mcp<'_>, tool: &StreamTool) -> Finding {
    const ID: &str = "sse.resume";
    if let Era::Stateless = mcp.era {
        return Finding::skip(ID, "2026-07-28 has no resumption");
    }
    let name = &tool.name;
    let request = tool.call(mcp, 2, 1000);
    let id = request.id.clone();
    let post = mcp.post(Conn::Pooled, &Message::Request(request));
    let resp = match send(post, mcp.http.timeout).await {
        Ok(r) => r,
        Err(e) => {
            let m = format!("tools/call {name}: {e:#}");
            return Finding::fail(ID, m, "see reachable");
        }
    };
    if !is_sse(resp.headers()) {
        return Finding::skip(
            ID,
            format!("{name} was answered as plain JSON: no stream to resume"),
        );
    }
    let mut reader = SseReader::new(resp);
    let deadline = Instant::now() + mcp.http.timeout;
    let last_id = loop {
        match reader.next(deadline).await {
            Item::Event(e) if e.id.as_deref().is_some_and(|i| !i.is_empty()) => break e.id,
            Item::Event(_) | Item::Comment => {}
            Item::End | Item::TimedOut => break None,
        }
    };
    // Dropped: the connection closes, as when a client loses it.
    drop(reader);
    let Some(last_id) = last_id else {
        return Finding::warn(
            ID,
            "the answer's SSE events carry no ids: a dropped stream cannot be resumed",
            "send event ids (mcpd does on every stream)",
        );
    };
    let sent = Instant::now();
    let resp = match mcp.get(Some(&last_id)).await {
        Ok(r) => r,
        Err(e) => {
            return Finding::fail(
                ID,
                format!("GET with Last-Event-ID: {e:#}"),
                "see reachable",
            )
        }
    };
    let reply = Reply::read(
        resp,
        sent,
        Some(&id),
        Duration::from_secs(2) + mcp.http.timeout,
    )
    .await;
    let status = reply.status.as_u16();
    let fix_store = "share the event log between replicas (mcpd: store.backend = \"redis\"; Helm chart: redis.url), or route each session to one replica";
    match (status, reply.ending) {
        (200, Ending::Response) => Finding::pass(
            ID,
            format!("resumed after the first event with Last-Event-ID: the result and {} more messages arrived on the GET", reply.messages.len() - 1),
        ),
        (200, _) => Finding::fail(ID, "the resumed stream ended without the result", fix_store),
        (404, _) => Finding::fail(ID, format!("GET with Last-Event-ID answered 404 ({}): the replica that answered does not know the session", reply.said()), fix_store),
        _ => Finding::fail(ID, format!("GET with Last-Event-ID answered {status}: {}", reply.said()), fix_store),
    }
    .with("status", status)
}
