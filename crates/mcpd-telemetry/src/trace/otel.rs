//! The OpenTelemetry exporter (the `otel` feature): spans over OTLP/HTTP,
//! and W3C Trace Context in and out.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;

use super::config::{exporting, BoxedLayer, TracingConfig};

/// The span exporter of a process that exports.
pub(super) struct Exporter(SdkTracerProvider);

impl Exporter {
    /// The subscriber layer that hands spans (at `info` and above) to it.
    pub(super) fn layer(&self) -> BoxedLayer {
        tracing_opentelemetry::layer()
            .with_tracer(self.0.tracer("mcpd"))
            .with_filter(tracing_subscriber::filter::LevelFilter::INFO)
            .boxed()
    }

    /// Makes W3C Trace Context the process's propagator.
    pub(super) fn propagate(&self) {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    }

    /// Flushes what is batched and stops.
    pub(super) fn shutdown(self) {
        if let Err(e) = self.0.shutdown() {
            eprintln!("mcpd: could not flush traces: {e}");
        }
    }
}

/// The exporter the config and the `OTEL_*` variables ask for; `None` when
/// they ask for none.
pub(super) fn exporter(config: &TracingConfig) -> Result<Option<Exporter>, String> {
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
    Ok(Some(Exporter(provider)))
}

/// `base` + `/v1/traces`, unless `base` already names a path.
fn traces_url(base: &str) -> String {
    let after_scheme = base.split_once("://").map_or(base, |(_, rest)| rest);
    match after_scheme.find('/') {
        Some(i) if !after_scheme[i..].trim_end_matches('/').is_empty() => base.to_string(),
        _ => format!("{}/v1/traces", base.trim_end_matches('/')),
    }
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
}
