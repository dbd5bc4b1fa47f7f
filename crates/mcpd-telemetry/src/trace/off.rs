//! Stands in for `otel.rs` in a build without the `otel` feature: nothing
//! is exported and no trace context is read or written. A configured
//! endpoint is an error at start-up (logged), not silently ignored.

use super::config::{BoxedLayer, TracingConfig};

/// No exporter exists in this build.
pub(super) enum Exporter {}

impl Exporter {
    pub(super) fn layer(&self) -> BoxedLayer {
        match *self {}
    }

    pub(super) fn propagate(&self) {
        match *self {}
    }

    pub(super) fn shutdown(self) {
        match self {}
    }
}

/// `None`, or why the export the config asks for cannot happen.
pub(super) fn exporter(config: &TracingConfig) -> Result<Option<Exporter>, String> {
    if config.enabled(|k| std::env::var(k).ok()) {
        return Err(
            "this server was built without mcpd's `otel` feature, so it cannot \
                    export the spans that tracing.otlp_endpoint or OTEL_EXPORTER_OTLP_ENDPOINT \
                    ask for (add features = [\"otel\"] to its mcpd dependency)"
                .into(),
        );
    }
    Ok(None)
}

/// Does nothing: this build exports no traces.
pub fn continue_trace(_: &tracing::Span, _: Option<&str>, _: Option<&str>) {}

/// `None`: this build exports no traces.
pub fn trace_context_of(_: &tracing::Span) -> Option<(String, Option<String>)> {
    None
}
