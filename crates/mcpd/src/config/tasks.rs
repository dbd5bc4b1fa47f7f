//! `[tasks]`: the Tasks extension (2026-07-28): how long task records are
//! kept, how often clients should poll, and how many tasks may run.

use std::time::Duration;

use mcpd_core::TaskConfig;
use serde::{Deserialize, Serialize};

use super::error::{bad, positive, ConfigError};

/// `[tasks]`: the Tasks extension (`io.modelcontextprotocol/tasks`): how
/// long task records live, how often clients poll, how many tasks may run.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TasksSection {
    /// Offer the extension (`server/discover` advertises it). Off: task
    /// tools run synchronously (optional) or are refused (required), and
    /// `tasks/*` are unknown methods.
    pub enabled: bool,
    /// A task's record is kept this long from its creation (`ttlMs`).
    pub ttl_secs: u64,
    /// An ended task's result stays readable at least this long, even if
    /// the task ended near the end of its TTL.
    pub result_retention_secs: u64,
    /// `pollIntervalMs`: how often clients should poll `tasks/get`.
    pub poll_interval_ms: u64,
    /// A task running longer is stopped and fails with `-32006`.
    pub max_run_secs: u64,
    /// Tasks not yet ended, per principal (all anonymous callers share one
    /// count without auth). More are refused with `-32005`.
    pub max_active_per_principal: usize,
    /// Tasks running on one replica. More are refused with `-32005`.
    pub max_working_per_replica: usize,
    /// A task's result (or error) larger than this is not kept: the task
    /// fails saying so. Results live in the store until their TTL ends.
    pub max_result_bytes: usize,
}

impl Default for TasksSection {
    fn default() -> Self {
        Self {
            enabled: true,
            ttl_secs: 7200,
            result_retention_secs: 600,
            poll_interval_ms: 1000,
            max_run_secs: 3600,
            max_active_per_principal: 100,
            max_working_per_replica: 256,
            max_result_bytes: 4 << 20,
        }
    }
}

impl TasksSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        positive(&[
            ("tasks.ttl_secs", self.ttl_secs),
            ("tasks.poll_interval_ms", self.poll_interval_ms),
            ("tasks.max_run_secs", self.max_run_secs),
            (
                "tasks.max_active_per_principal",
                self.max_active_per_principal as u64,
            ),
            (
                "tasks.max_working_per_replica",
                self.max_working_per_replica as u64,
            ),
            ("tasks.max_result_bytes", self.max_result_bytes as u64),
        ])?;
        if self.max_run_secs >= self.ttl_secs {
            return Err(bad(
                "tasks.max_run_secs",
                format!(
                    "must be less than tasks.ttl_secs ({}): a task's record would expire while it runs",
                    self.ttl_secs
                ),
            ));
        }
        Ok(())
    }
}

impl From<&TasksSection> for TaskConfig {
    fn from(s: &TasksSection) -> Self {
        TaskConfig {
            ttl: Duration::from_secs(s.ttl_secs),
            keep_result: Duration::from_secs(s.result_retention_secs),
            poll_interval: Duration::from_millis(s.poll_interval_ms),
            max_run: Duration::from_secs(s.max_run_secs),
            max_active_per_principal: s.max_active_per_principal,
            max_working_per_replica: s.max_working_per_replica,
            max_result_bytes: s.max_result_bytes,
        }
    }
}
