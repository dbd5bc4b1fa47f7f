//! The settings of logs and trace export, and whether spans are exported:
//! the leaf that `trace.rs` and the exporter both read.

use std::sync::atomic::{AtomicBool, Ordering};

use tracing_subscriber::{Layer, Registry};

/// A layer of the process's subscriber.
pub(super) type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

static EXPORTING: AtomicBool = AtomicBool::new(false);

/// Whether spans are being exported (trace context is worth parsing).
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Acquire)
}

/// Spans are exported from now on.
pub(super) fn exporting_now() {
    EXPORTING.store(true, Ordering::Release);
}

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
