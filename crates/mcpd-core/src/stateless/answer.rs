//! What the stateless era's entry answers.

use mcpd_protocol::ErrorObject;

use crate::stream::StreamReceiver;

/// How a 2026-07-28 request is answered.
#[derive(Debug)]
pub enum Answer {
    /// Refused before anything ran (a method this era lacks, an extension
    /// the request did not declare).
    Refused(ErrorObject),
    /// The stream its messages and outcome arrive on: one JSON body
    /// unless something is emitted first. Dropping it cancels the request.
    Stream(StreamReceiver),
}
