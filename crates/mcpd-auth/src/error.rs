//! Why a request was refused, and the `reason` label each refusal counts
//! under. A leaf module: every check imports it from here.

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header: 401 without `error`.
    #[error("authorization required: send Authorization: Bearer <access token>")]
    Missing,
    /// A token that does not pass: 401 `invalid_token`.
    #[error("{description}")]
    Invalid {
        reason: &'static str,
        description: String,
    },
    /// A malformed authorization request: 400 `invalid_request`.
    #[error("{0}")]
    BadRequest(String),
    /// A request with the `DPoP` scheme that does not pass: 401 with the
    /// error (`invalid_token` or `invalid_dpop_proof`) on the DPoP
    /// challenge.
    #[error("{description}")]
    Dpop {
        reason: &'static str,
        error: &'static str,
        description: String,
    },
    /// The token cannot be checked now (the introspection endpoint or the
    /// DPoP replay cache does not answer): 503, the token may be fine.
    #[error("{0}")]
    Unavailable(String),
}

impl AuthError {
    /// The `reason` label of `mcpd_auth_rejections_total`.
    pub fn reason(&self) -> &'static str {
        match self {
            AuthError::Missing => "missing_token",
            AuthError::Invalid { reason, .. } | AuthError::Dpop { reason, .. } => reason,
            AuthError::BadRequest(_) => "invalid_request",
            AuthError::Unavailable(_) => "unavailable",
        }
    }

    pub(crate) fn invalid(description: impl Into<String>) -> Self {
        AuthError::Invalid {
            reason: "invalid_token",
            description: description.into(),
        }
    }

    pub(crate) fn proof(description: impl Into<String>) -> Self {
        AuthError::Dpop {
            reason: "invalid_dpop_proof",
            error: "invalid_dpop_proof",
            description: description.into(),
        }
    }

    /// The same refusal, for a request that used the `DPoP` scheme: its
    /// challenge is the DPoP one.
    pub(crate) fn under_dpop(self) -> Self {
        match self {
            AuthError::Invalid {
                reason,
                description,
            } => AuthError::Dpop {
                reason,
                error: "invalid_token",
                description,
            },
            other => other,
        }
    }
}
