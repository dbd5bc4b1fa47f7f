//! Logs and traces. [`init`] installs the process's `tracing` subscriber:
//! human or JSON log lines on stderr, plus — when an OTLP endpoint is
//! configured — an OpenTelemetry layer that exports spans over OTLP/HTTP.
//!
//! mcpd opens three kinds of span: `http.request` (one per HTTP request, its
//! parent taken from the `traceparent` header), `mcp.request` (one per
//! JSON-RPC request, its parent taken from `params._meta.traceparent` when the
//! client put one there, else the HTTP request's span) and `mcp.tool` (the
//! tool's own work). Their fields (`mcp.session.id`, `jsonrpc.request.id`,
//! `mcp.method.name`, named as OpenTelemetry's MCP conventions name them)
//! appear on every log line written inside them.
//!
//! With tracing off nothing is exported and no trace context is parsed: the
//! spans are only the log lines' context.

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

static EXPORTING: AtomicBool = AtomicBool::new(false);

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Human,
    Json,
}

/// Where and how spans are exported.
#[derive(Debug, Clone, Default)]
pub struct TracingConfig {
    /// OTLP/HTTP base URL (`/v1/traces` is appended, as for
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`). Empty: use the `OTEL_*` variables;
    /// with none of those set, tracing is off.
    pub otlp_endpoint: String,
    /// `service.name` of the exported spans, unless `OTEL_SERVICE_NAME` says.
    pub service_name: String,
    /// Fraction of new traces sampled (a sampled parent is always followed).
    pub sample_ratio: f64,
}

impl TracingConfig {
    /// Whether spans are exported, given the config and the environment.
    pub fn enabled(&self, env: impl Fn(&str) -> Option<String>) -> bool {
        let set = |k: &str| env(k).is_some_and(|v| !v.trim().is_empty());
        let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
        !disabled
            && (!self.otlp_endpoint.trim().is_empty()
                || set("OTEL_EXPORTER_OTLP_ENDPOINT")
                || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    }
}

/// Flushes and stops the exporter when dropped (at the end of `main`).
#[must_use = "dropping the guard stops trace export"]
pub struct TracingGuard(Option<SdkTracerProvider>);

impl Drop for TracingGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take() {
            if let Err(e) = provider.shutdown() {
                eprintln!("mcpd: could not flush traces: {e}");
            }
        }
    }
}

/// Installs the global subscriber. `level` is an `EnvFilter` directive
/// (`info`, `mcpd=debug,info`, …). An exporter that cannot be built is
/// reported and tracing stays off; it never stops the server.
pub fn init(format: LogFormat, level: &str, tracing: &TracingConfig) -> TracingGuard {
    let filter = tracing_subscriber::EnvFilter::new(level);
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    // Each layer has its own filter: the log level must not decide which
    // spans are exported (with `warn` logs, spans would vanish too).
    let fmt = match format {
        LogFormat::Human => fmt.with_filter(filter).boxed(),
        LogFormat::Json => fmt.json().with_filter(filter).boxed(),
    };
    let (otel, provider, problem) = match exporter(tracing) {
        Ok(Some(provider)) => {
            let layer = tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("mcpd"))
                .with_filter(tracing_subscriber::filter::LevelFilter::INFO)
                .boxed();
            (Some(layer), Some(provider), None)
        }
        Ok(None) => (None, None, None),
        Err(e) => (None, None, Some(e)),
    };
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init();
    if let Some(e) = problem {
        tracing::error!("tracing export is off: {e}");
    }
    if provider.is_some() {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        EXPORTING.store(true, Ordering::Release);
        tracing::info!("exporting traces over OTLP/HTTP");
    }
    TracingGuard(provider)
}

fn exporter(config: &TracingConfig) -> Result<Option<SdkTracerProvider>, String> {
    if !config.enabled(|k| std::env::var(k).ok()) {
        return Ok(None);
    }
    // Headers, timeout and compression come from the OTEL_EXPORTER_OTLP_* variables.
    use opentelemetry_otlp::WithExportConfig;
    let mut builder = opentelemetry_otlp::SpanExporter::builder().with_http();
    let endpoint = config.otlp_endpoint.trim();
    if !endpoint.is_empty() {
        builder = builder.with_endpoint(traces_url(endpoint));
    }
    let exporter = builder.build().map_err(|e| e.to_string())?;
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| {
            if config.service_name.is_empty() {
                "mcpd".into()
            } else {
                config.service_name.clone()
            }
        });
    let ratio = config.sample_ratio.clamp(0.0, 1.0);
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            ratio,
        ))))
        .with_resource(Resource::builder().with_service_name(service).build())
        .build();
    Ok(Some(provider))
}

/// `base` + `/v1/traces`, unless `base` already names a path.
fn traces_url(base: &str) -> String {
    let after_scheme = base.split_once("://").map_or(base, |(_, rest)| rest);
    match after_scheme.find('/') {
        Some(i) if !after_scheme[i..].trim_end_matches('/').is_empty() => base.to_string(),
        _ => format!("{}/v1/traces", base.trim_end_matches('/')),
    }
}

/// Whether request spans are worth creating: when they are exported, or
/// when the log level shows debug lines (which then carry the session and
/// request ids). At the default `info` without export they cost a third of
/// a small request's CPU, so they are skipped.
pub fn spans_wanted() -> bool {
    exporting() || tracing::enabled!(target: "mcpd", tracing::Level::DEBUG)
}

/// Whether spans are being exported (trace context is worth parsing).
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Acquire)
}

/// Makes the remote context in `traceparent`/`tracestate` the parent of
/// `span`, when exporting and the value parses (a bad one is ignored, as
/// W3C Trace Context says).
pub fn continue_trace(span: &tracing::Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    let Some(traceparent) = traceparent.filter(|_| exporting()) else {
        return;
    };
    struct Carrier<'a>(&'a str, Option<&'a str>);
    impl Extractor for Carrier<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            match key {
                "traceparent" => Some(self.0),
                "tracestate" => self.1,
                _ => None,
            }
        }
        fn keys(&self) -> Vec<&str> {
            vec!["traceparent", "tracestate"]
        }
    }
    let cx = TraceContextPropagator::new().extract(&Carrier(traceparent, tracestate));
    use opentelemetry::trace::TraceContextExt;
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

/// The W3C `traceparent` (and `tracestate`, when there is one) naming
/// `span`, to carry to the next hop; `None` when not exporting.
pub fn trace_context_of(span: &tracing::Span) -> Option<(String, Option<String>)> {
    if !exporting() {
        return None;
    }
    #[derive(Default)]
    struct Carrier(Vec<(String, String)>);
    impl Injector for Carrier {
        fn set(&mut self, key: &str, value: String) {
            self.0.push((key.to_owned(), value));
        }
    }
    let mut c = Carrier::default();
    TraceContextPropagator::new().inject_context(&span.context(), &mut c);
    let get = |k: &str| c.0.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    let state = get("tracestate").filter(|s| !s.is_empty());
    Some((get("traceparent")?, state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_url_appends_the_signal_path_to_a_base() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://collector:4318/"),
            "http://collector:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://x.example/otlp/v1/traces"),
            "https://x.example/otlp/v1/traces"
        );
    }

    #[test]
    fn enabled_by_config_or_standard_variables_and_disabled_by_them() {
        let none = |_: &str| None;
        let off = TracingConfig::default();
        assert!(!off.enabled(none));
        assert!(off.enabled(|k| (k == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://c".into())));
        let on = TracingConfig {
            otlp_endpoint: "http://c:4318".into(),
            ..Default::default()
        };
        assert!(on.enabled(none));
        assert!(!on.enabled(|k| (k == "OTEL_SDK_DISABLED").then(|| "true".into())));
        assert!(!on.enabled(|k| (k == "OTEL_TRACES_EXPORTER").then(|| "none".into())));
    }
}
