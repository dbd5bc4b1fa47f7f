//! Progress and cancellation notifications.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A progress token is a string or an integer, echoed with its JSON type.
pub type ProgressToken = Value;

/// `params` of `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams {
    /// The `_meta.progressToken` of the request this reports on (`progressToken`).
    pub progress_token: ProgressToken,
    /// How far the request has got; grows with every notification (may be fractional).
    pub progress: f64,
    /// The value `progress` will reach when done, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What is happening now, for people (2025-03-26+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `params` of `notifications/cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams {
    /// The id of the request to cancel (`requestId`), which this notification's sender
    /// sent earlier.
    pub request_id: crate::jsonrpc::RequestId,
    /// Why, for logs or the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
