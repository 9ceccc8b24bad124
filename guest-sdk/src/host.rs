//! Calls into the host during a request: logging, progress, cancellation, and asking the
//! client for sampling, elicitation and roots. Each is tied to the request being served.

use std::fmt;

use crate::bindings::paddock::plugin::host as wit;

pub use wit::{ElicitationAction, ListKind, LogLevel as Level, Root, SamplingMessage, SamplingRequest, SamplingResult};

/// Logs `message` at `level`. It reaches the host log, and the client when it asked for that level.
pub fn log(level: Level, message: &str) {
    wit::log(level, None, message);
}

/// Logs structured data (any JSON value) under a logger name.
pub fn log_json(level: Level, logger: &str, data: &serde_json::Value) {
    wit::log(level, Some(logger), &data.to_string());
}

/// Logs at debug level.
pub fn debug(message: &str) {
    log(Level::Debug, message);
}

/// Logs at info level.
pub fn info(message: &str) {
    log(Level::Info, message);
}

/// Logs at warning level.
pub fn warn(message: &str) {
    log(Level::Warning, message);
}

/// Logs at error level.
pub fn error(message: &str) {
    log(Level::Error, message);
}

/// Reports progress of the current request (sent when the client asked for progress).
/// `progress` must increase from one report to the next.
pub fn progress(progress: f64, total: Option<f64>, message: Option<&str>) {
    wit::progress(progress, total, message);
}

/// True once the client has cancelled the current request. Long loops should check it.
pub fn is_cancelled() -> bool {
    wit::is_cancelled()
}

/// Why a request to the client did not produce an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientError {
    /// The client does not support this (it did not declare the capability).
    Unsupported(String),
    /// The client or its user refused.
    Rejected(String),
    /// Anything else: transport closed, timeout, malformed answer.
    Failed(String),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Unsupported(m) => write!(f, "unsupported by the client: {m}"),
            ClientError::Rejected(m) => write!(f, "rejected: {m}"),
            ClientError::Failed(m) => write!(f, "failed: {m}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<wit::ClientError> for ClientError {
    fn from(error: wit::ClientError) -> ClientError {
        match error {
            wit::ClientError::Unsupported(m) => ClientError::Unsupported(m),
            wit::ClientError::Rejected(m) => ClientError::Rejected(m),
            wit::ClientError::Failed(m) => ClientError::Failed(m),
        }
    }
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// Accept, decline or cancel.
    pub action: ElicitationAction,
    /// The answer, when accepted.
    pub content: Option<serde_json::Value>,
}

/// Asks the user for input matching `schema` (a flat object schema of primitive properties).
pub fn elicit(message: &str, schema: &serde_json::Value) -> Result<Elicitation, ClientError> {
    let request = wit::ElicitationRequest { message: message.to_owned(), requested_schema: schema.to_string() };
    let result = wit::elicit(&request)?;
    let content = match result.content {
        Some(text) => Some(serde_json::from_str(&text).map_err(|e| ClientError::Failed(format!("malformed answer: {e}")))?),
        None => None,
    };
    Ok(Elicitation { action: result.action, content })
}

/// Asks the client's model for a completion.
pub fn sample(request: &SamplingRequest) -> Result<SamplingResult, ClientError> {
    Ok(wit::sample(request)?)
}

/// Asks the client for the roots it exposes.
pub fn list_roots() -> Result<Vec<Root>, ClientError> {
    Ok(wit::list_roots()?)
}

/// Announces that one of the plugin's lists changed.
pub fn notify_list_changed(kind: ListKind) {
    wit::notify_list_changed(kind);
}

/// Announces that a resource's contents changed.
pub fn notify_resource_updated(uri: &str) {
    wit::notify_resource_updated(uri);
}
