//! `[tracing]`: OpenTelemetry trace export (OTLP over HTTP).

use mcpd_telemetry::trace::TracingConfig;
use serde::{Deserialize, Serialize};

use super::error::{bad, ConfigError};

/// OpenTelemetry trace export (OTLP over HTTP). The standard `OTEL_*`
/// variables work too (`OTEL_EXPORTER_OTLP_ENDPOINT`, `..._HEADERS`,
/// `OTEL_SERVICE_NAME`, `OTEL_BSP_*`, `OTEL_SDK_DISABLED`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TracingSection {
    /// OTLP/HTTP base URL, e.g. `http://otel-collector:4318`; empty = off
    /// unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
    pub otlp_endpoint: String,
    /// `service.name` of exported spans (default `mcpd`);
    /// `OTEL_SERVICE_NAME` wins over it.
    pub service_name: String,
    /// Fraction of new traces kept (0.0–1.0); a client's sampled trace is
    /// always continued.
    pub sample_ratio: f64,
}

impl Default for TracingSection {
    fn default() -> Self {
        Self {
            otlp_endpoint: String::new(),
            service_name: "mcpd".into(),
            sample_ratio: 1.0,
        }
    }
}

impl TracingSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Err(bad("tracing.sample_ratio", "must be between 0.0 and 1.0"));
        }
        let endpoint = self.otlp_endpoint.trim();
        if !endpoint.is_empty()
            && !endpoint.starts_with("http://")
            && !endpoint.starts_with("https://")
        {
            return Err(bad(
                "tracing.otlp_endpoint",
                format!("{endpoint:?} is not an http(s) URL like http://otel-collector:4318"),
            ));
        }
        Ok(())
    }
}

/// Trace export settings for [`mcpd_telemetry::trace::init`].
impl From<&TracingSection> for TracingConfig {
    fn from(t: &TracingSection) -> Self {
        TracingConfig {
            otlp_endpoint: t.otlp_endpoint.clone(),
            service_name: t.service_name.clone(),
            sample_ratio: t.sample_ratio,
        }
    }
}
