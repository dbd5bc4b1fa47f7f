//! Stands in for `bearer.rs` in a build without the `auth` feature: no
//! [`Authenticator`] can exist, so no request carries a [`Principal`].

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::HttpRequest;
use mcpd_core::caller::Visibility;
use mcpd_protocol::jsonrpc::Request;
use mcpd_telemetry::Metrics;

use crate::error::HttpError;

/// Bearer-token checks, absent from this build: no value of it exists.
#[derive(Debug)]
pub enum Authenticator {}

/// Who a token names, absent from this build: no value of it exists.
#[derive(Debug, Clone)]
pub enum Principal {}

impl Authenticator {
    /// The Protected Resource Metadata paths (none exist in this build).
    pub fn metadata_paths(&self) -> Vec<String> {
        match *self {}
    }

    /// The Protected Resource Metadata document (none in this build).
    pub fn metadata(&self) -> serde_json::Value {
        match *self {}
    }
}

impl Principal {
    /// The rate-limit and ownership key of the principal.
    pub fn key(&self) -> String {
        match *self {}
    }
}

pub(super) async fn admit(
    auth: &Authenticator,
    _: &HttpRequest,
    _: &Metrics,
    _: &[String],
) -> Result<Principal, HttpError> {
    match *auth {}
}

pub(super) fn token_of(_: &HttpRequest) -> Option<Arc<str>> {
    None
}

pub(super) fn tenant(p: &Principal) -> Option<Arc<str>> {
    match *p {}
}

pub(super) fn visibility(
    auth: &Arc<Authenticator>,
    _: &Principal,
    _: Option<&Arc<dyn Policy>>,
    _: &crate::naming::Names,
    _: (&Arc<HashMap<String, Vec<String>>>, &str),
) -> Option<Visibility> {
    match **auth {}
}

/// Per-call policies need auth: none exists in this build.
pub trait Policy: Send + Sync {}

pub(super) fn check_policy(
    _: &dyn Policy,
    (_, p): (&Authenticator, &Principal),
    _: (&mcpd_protocol::jsonrpc::Request, Option<&str>),
    _: &crate::naming::Names,
    _: &Metrics,
) -> Result<(), HttpError> {
    match *p {}
}

pub(super) fn check_request(
    auth: &Authenticator,
    _: &Principal,
    _: (&Request, Option<&str>),
    _: (&[String], &HashMap<String, Vec<String>>, &str),
    _: &Metrics,
) -> Result<(), HttpError> {
    match *auth {}
}
