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
//!
//! The exporter is `otel.rs`, built with the `otel` feature; without it,
//! `off.rs` stands in (nothing is exported, and a configured endpoint is
//! reported at start-up rather than ignored).

use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

mod config;
#[cfg(feature = "otel")]
mod otel;
#[cfg(not(feature = "otel"))]
#[path = "trace/off.rs"]
mod otel;

use config::BoxedLayer;
pub use config::{exporting, LogFormat, TracingConfig};
pub use otel::{continue_trace, trace_context_of};

/// Flushes and stops the exporter when dropped (at the end of `main`).
#[must_use = "dropping the guard stops trace export"]
pub struct TracingGuard(Option<otel::Exporter>);

impl Drop for TracingGuard {
    fn drop(&mut self) {
        if let Some(exporter) = self.0.take() {
            exporter.shutdown();
        }
    }
}

/// The log filter `level` names: comma-separated directives, each a level
/// (`info`: the default) or `target=level` (`mcpd::audit=info`: that
/// target and those below it). Span and field filters (`[span{f=v}]`) are
/// not supported: they need a regex engine in every build for a rare need.
pub fn parse_filter(level: &str) -> Result<Targets, String> {
    level.parse::<Targets>().map_err(|e| {
        format!("{level:?} is not a log filter ({e}): use a level (error, warn, info, debug, trace, off) or target=level directives, comma-separated, e.g. warn,mcpd::audit=info")
    })
}

/// Installs the global subscriber. `level` is a [`parse_filter`] filter
/// (configuration loading has checked it; one that does not parse logs
/// at `info`). An exporter that cannot be built is reported and tracing
/// stays off; it never stops the server.
pub fn init(format: LogFormat, level: &str, tracing: &TracingConfig) -> TracingGuard {
    let filter =
        parse_filter(level).unwrap_or_else(|_| Targets::new().with_default(tracing::Level::INFO));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    // Each layer has its own filter: the log level must not decide which
    // spans are exported (with `warn` logs, spans would vanish too).
    let fmt: BoxedLayer = match format {
        LogFormat::Human => fmt.with_filter(filter).boxed(),
        LogFormat::Json => fmt.json().with_filter(filter).boxed(),
    };
    let (exporter, problem) = match otel::exporter(tracing) {
        Ok(exporter) => (exporter, None),
        Err(e) => (None, Some(e)),
    };
    let mut layers = vec![fmt];
    layers.extend(exporter.as_ref().map(otel::Exporter::layer));
    let _ = tracing_subscriber::registry().with(layers).try_init();
    if let Some(e) = problem {
        tracing::error!("tracing export is off: {e}");
    }
    if let Some(exporter) = &exporter {
        exporter.propagate();
        config::exporting_now();
        tracing::info!("exporting traces over OTLP/HTTP");
    }
    TracingGuard(exporter)
}

/// Whether request spans are worth creating: when they are exported, or
/// when the log level shows debug lines (which then carry the session and
/// request ids). At the default `info` without export they cost a third of
/// a small request's CPU, so they are skipped.
pub fn spans_wanted() -> bool {
    exporting() || tracing::enabled!(target: "mcpd", tracing::Level::DEBUG)
}

#[cfg(test)]
mod tests {
    use super::*;

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
