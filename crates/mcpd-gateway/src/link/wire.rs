//! The 2026-07-28 revision's wire as the stateless link writes and reads
//! it: the per-request envelope and headers, the keys the link and the
//! actor pass each other, and what a result loses for the session era. A
//! leaf: `stateless.rs`, `http.rs` and the actor's routing import it.

use base64::Engine;
use mcpd_protocol::jsonrpc::Message;
use mcpd_protocol::methods::meta;
use mcpd_protocol::types::JsonObject;
use mcpd_protocol::{ErrorObject, Method, RequestId};
use serde_json::{json, Value};

/// The revision this link speaks.
pub const VERSION: &str = "2026-07-28";
/// Where a question relayed to the actor carries the upstream's own key
/// for it (in `params._meta`); the relay takes it off before asking.
pub const INPUT_KEY: &str = "mcpd/inputKey";
/// Where the actor puts, in a call's `params._meta`, the capabilities its
/// client declared: this link declares them to the upstream for the call;
/// no other link is given it (`upstream/routing.rs` `start_call`).
pub const CLIENT_CAPABILITIES_KEY: &str = "mcpd/clientCapabilities";
/// Where the gateway puts, in a `tools/call`'s `params._meta`, the
/// `Mcp-Param-*` headers (name → argument value) its tool's schema asks
/// for; this link sends them, and no other link is given them.
pub const PARAM_HEADERS_KEY: &str = "mcpd/paramHeaders";
/// Set (`true`) by the gateway in a call's `params._meta` when the
/// client's Tasks declaration goes to the upstream with it (an upstream
/// that runs its own tasks, a call mcpd does not run as a task); without
/// it the actor takes the extension out of the declared capabilities.
pub const PASS_TASKS_KEY: &str = "mcpd/passTasks";
/// Where the gateway puts, in a call's `params._meta`, the headers the
/// call's HTTP request carries besides the upstream's own (the caller's
/// tenant): every link takes them off, and an HTTP one sends them.
pub const OUTBOUND_HEADERS_KEY: &str = "mcpd/headers";
/// Most rounds of questions one call may take before it fails.
pub(crate) const MAX_ROUNDS: u32 = 10;

/// Our id of the actor's request (it numbers them from 1).
pub(crate) fn call_id(id: &RequestId) -> Option<u64> {
    match id {
        RequestId::Int(n) => u64::try_from(*n).ok(),
        RequestId::Str(_) => None,
    }
}

/// The per-request `_meta` every request carries in this revision: the
/// version, the capabilities of the client the call is for (for a call of
/// no client, such as the catalogue's reads, what mcpd can relay), and who
/// it is.
pub(crate) fn envelope(caps: Option<Value>) -> JsonObject {
    let caps = caps
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}}));
    let mut m = JsonObject::new();
    m.insert(meta::PROTOCOL_VERSION.into(), Value::from(VERSION));
    m.insert(meta::CLIENT_CAPABILITIES.into(), caps);
    m.insert(
        meta::CLIENT_INFO.into(),
        json!({"name": "mcpd-gateway", "version": env!("CARGO_PKG_VERSION")}),
    );
    m
}

/// `params._meta`, an empty object added when there is none (`None`: one
/// that is not an object).
pub(crate) fn meta_mut(params: &mut JsonObject) -> Option<&mut JsonObject> {
    params
        .entry("_meta")
        .or_insert_with(|| Value::Object(JsonObject::new()))
        .as_object_mut()
}

/// A remote upstream as a link reaches it: its address, the HTTP client
/// and its configured headers, and its credentials.
pub(crate) struct Remote {
    pub(crate) client: reqwest::Client,
    pub(crate) url: String,
    /// `headers` of its configuration (its own credentials).
    pub(crate) headers: Vec<(String, String)>,
    /// `[upstream.credentials]`, when set.
    creds: Option<std::sync::Arc<crate::credentials::Credentials>>,
}

impl Remote {
    pub(crate) fn of(cfg: &crate::config::UpstreamConfig) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout())
            .build()
            .unwrap_or_default();
        let headers = cfg
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Self {
            client,
            url: cfg.url.clone(),
            headers,
            creds: cfg.auth.clone(),
        }
    }

    /// `b` with the credentials (`authorize`): the call's own, else the
    /// connection's.
    pub(crate) async fn authorized(
        &self,
        b: reqwest::RequestBuilder,
        call: &[(String, String)],
    ) -> Result<reqwest::RequestBuilder, String> {
        authorize(b, self.creds.as_deref(), call).await
    }

    /// The upstream answered `status`: a 401 means a token it no longer
    /// takes, fetched anew next time.
    pub(crate) fn refused(&self, status: reqwest::StatusCode) {
        if let (401, Some(c)) = (status.as_u16(), &self.creds) {
            c.refused();
        }
    }
}

/// `Mcp-Param-*` headers on a request (SEP-2243).
pub(crate) trait ParamHeaders {
    /// `Mcp-Param-{Name}` for each of `headers` (name → the argument's
    /// value: a string, a number or a boolean), as the revision encodes it.
    fn headers_for_params(self, headers: Option<&Value>) -> Self;
}

impl ParamHeaders for reqwest::RequestBuilder {
    fn headers_for_params(mut self, headers: Option<&Value>) -> Self {
        for (name, value) in headers.and_then(Value::as_object).into_iter().flatten() {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            self = self.header(format!("mcp-param-{name}"), header_value(&text));
        }
        self
    }
}

/// Takes the call's own headers ([`OUTBOUND_HEADERS_KEY`]) off `params`
/// (and a `_meta` left empty by it).
pub(crate) fn take_outbound(params: &mut JsonObject) -> Vec<(String, String)> {
    let Some(Value::Object(meta)) = params.get_mut("_meta") else {
        return Vec::new();
    };
    let Some(Value::Object(h)) = meta.remove(OUTBOUND_HEADERS_KEY) else {
        return Vec::new();
    };
    if meta.is_empty() {
        params.remove("_meta");
    }
    h.into_iter()
        .filter_map(|(k, v)| Some((k, v.as_str()?.to_owned())))
        .collect()
}

/// [`take_outbound`] of a request message.
pub(crate) fn take_outbound_of(msg: &mut Message) -> Vec<(String, String)> {
    match msg {
        Message::Request(r) => r.params.as_mut().map(take_outbound).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// `b` with the upstream's credentials: the call's own headers (`call`),
/// and the connection's (`creds`) unless the call's replace them. `Err`:
/// no token could be had (the reason, for the caller).
pub(crate) async fn authorize(
    mut b: reqwest::RequestBuilder,
    creds: Option<&crate::credentials::Credentials>,
    call: &[(String, String)],
) -> Result<reqwest::RequestBuilder, String> {
    // A call with its own Authorization does not wait for the
    // connection's token (nor fail with its authorization server).
    let own = call
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    if let Some(c) = creds.filter(|_| !own) {
        if let Some((name, value)) = c.connection().await? {
            if !call.iter().any(|(k, _)| k.eq_ignore_ascii_case(&name)) {
                b = b.header(name, value);
            }
        }
    }
    for (k, v) in call {
        b = b.header(k, v);
    }
    Ok(b)
}

/// Puts a call's own headers back on it (it is sent again).
pub(crate) fn put_outbound(msg: &mut Message, call: &[(String, String)]) {
    let Message::Request(r) = msg else { return };
    if call.is_empty() {
        return;
    }
    let params = r.params.get_or_insert_with(JsonObject::new);
    if let Some(meta) = meta_mut(params) {
        let h: JsonObject = call
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        meta.insert(OUTBOUND_HEADERS_KEY.into(), Value::Object(h));
    }
}

/// Whether an answer is an SSE stream (else one JSON body).
pub(crate) fn is_sse(res: &reqwest::Response) -> bool {
    res.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"))
}

/// `b` with the revision's headers for `method` (and `Mcp-Name` from
/// `params`), then the upstream's configured ones.
pub(crate) fn headers(
    mut b: reqwest::RequestBuilder,
    method: &str,
    params: Option<&JsonObject>,
    configured: &[(String, String)],
) -> reqwest::RequestBuilder {
    b = b
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", header_value(method));
    let target = Method::parse(method).and_then(|m| m.info().target);
    if let Some(name) = target.and_then(|t| params?.get(t)).and_then(Value::as_str) {
        b = b.header("mcp-name", header_value(name));
    }
    for (k, v) in configured {
        b = b.header(k, v);
    }
    b
}

/// A header value as the revision carries it: plain visible ASCII as is,
/// anything else as `=?base64?…?=`.
pub(crate) fn header_value(v: &str) -> String {
    let plain =
        !v.is_empty() && v.bytes().all(|b| (0x21..=0x7e).contains(&b)) && !v.starts_with("=?");
    match plain {
        true => v.to_owned(),
        false => format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(v)
        ),
    }
}

pub(crate) fn text_json(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

/// A JSON-RPC response's result or error.
pub(crate) fn outcome_of(v: Value) -> Result<Value, ErrorObject> {
    match Message::from_value(v) {
        Ok(Message::Response(r)) => r.outcome,
        Ok(_) => Err(ErrorObject::internal(
            "the upstream answered with a request",
        )),
        Err(e) => Err(ErrorObject::internal(format!(
            "the upstream sent a malformed response: {e}"
        ))),
    }
}

/// A complete result as a session-era result: the revision's own keys
/// (`resultType`, the cache hints, `serverInfo` in `_meta`) go; core adds
/// them again for a 2026-07-28 client.
pub(crate) fn complete(mut result: Value) -> Value {
    if let Value::Object(r) = &mut result {
        for key in ["resultType", "ttlMs", "cacheScope"] {
            r.remove(key);
        }
        if let Some(Value::Object(meta)) = r.get_mut("_meta") {
            meta.remove("io.modelcontextprotocol/serverInfo");
            if meta.is_empty() {
                r.remove("_meta");
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_are_plain_ascii_or_base64() {
        assert_eq!(header_value("tools/call"), "tools/call");
        assert_eq!(
            header_value("wetter in münchen"),
            "=?base64?d2V0dGVyIGluIG3DvG5jaGVu?="
        );
        assert_eq!(header_value(" x"), "=?base64?IHg=?=");
    }

    #[test]
    fn a_complete_result_loses_the_revision_s_keys() {
        let r = complete(
            json!({"resultType": "complete", "ttlMs": 5, "cacheScope": "public",
            "tools": [], "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "u"}}}),
        );
        assert_eq!(r, json!({"tools": []}));
    }
}
