//! Calls into the host during a request: logging, progress, cancellation and change notices.
//! Each is tied to the request being served. Input from the client (forms, sampling, roots) is
//! asked through [`crate::Request`].

use crate::bindings::paddock::plugin::host as wit;

pub use wit::{ListKind, LogLevel as Level};

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

/// Announces that one of the plugin's lists changed.
pub fn notify_list_changed(kind: ListKind) {
    wit::notify_list_changed(kind);
}

/// Announces that a resource's contents changed.
pub fn notify_resource_updated(uri: &str) {
    wit::notify_resource_updated(uri);
}
