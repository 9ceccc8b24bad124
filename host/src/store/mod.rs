//! The shared store (`--store redis://…`, `rediss://…` or `unix://…`): what replicas share, kept in
//! Redis or a server that speaks its protocol, with commands every such server has (no modules).
//!
//! - `tasks.rs`: 2026-07-28 tasks as hashes, changed only by scripts that check the owner and
//!   the status (a finished task never changes again), with an index per owner;
//! - `feed.rs`: changes published by one replica and delivered to every other, and task
//!   cancellations delivered to the replica running the task;
//! - `limits.rs`: rate-limit buckets charged several at once by one script (all or nothing),
//!   and single-use approvals.
//!
//! Every call has a deadline (`STORE_TIMEOUT`); a store that does not answer in time, or cannot
//! be reached, is an error naming it, never a wait. The connection is re-established in the
//! background with backoff (and each call tries it again), so a store that comes back is used
//! again without a restart. Keys live under a namespace drawn from the shared key, so clusters
//! with different keys can share one server without seeing each other's state.

mod feed;
mod limits;
mod tasks;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

pub use feed::{FeedEvent, MAX_FEED_MESSAGE};
pub use limits::{Bucket, Charged};
pub use tasks::{Answered, Cancelled, Created, MAX_STORED_PER_OWNER, StoredTask};

/// The longest any one call to the store may take.
pub const STORE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// What went wrong with the store. Every message names it (with its password left out).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("the shared store {0} is unavailable: {1}")]
    Unavailable(String, String),
    #[error("the shared store {0} did not answer within {1:?}")]
    Timeout(String, Duration),
    #[error("`{0}` is not a store URL: use redis://HOST[:PORT][/DB], rediss://… for TLS, or unix:///PATH")]
    Url(String),
}

/// How the store is doing, for `/readyz`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoreHealth {
    pub url: String,
    pub ok: bool,
    pub last_error: Option<String>,
    pub last_error_seconds_ago: Option<u64>,
}

/// A connection to the shared store.
pub struct Store {
    shown: String,
    client: redis::Client,
    manager: ConnectionManager,
    namespace: String,
    ok: AtomicBool,
    last_error: Mutex<Option<(String, Instant)>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("url", &self.shown).field("namespace", &self.namespace).finish_non_exhaustive()
    }
}

impl Store {
    /// Opens the store at `url` for the cluster keyed by `material`, and checks that it answers.
    /// With `optional`, a store that does not answer yet is not an error: calls fail until it
    /// does.
    ///
    /// # Errors
    /// The URL cannot be used, or (unless `optional`) the store does not answer.
    pub async fn open(url: &str, material: &[u8], optional: bool) -> Result<Store, StoreError> {
        let shown = shown(url);
        let client = redis::Client::open(url).map_err(|_| StoreError::Url(shown.clone()))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(STORE_TIMEOUT))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_secs(1));
        let manager = ConnectionManager::new_lazy_with_config(client.clone(), config).map_err(|e| StoreError::Unavailable(shown.clone(), e.to_string()))?;
        let digest = blake3::derive_key("paddock 2026-11 store namespace", material);
        let namespace = format!("paddock:{}", digest[..6].iter().map(|b| format!("{b:02x}")).collect::<String>());
        let store = Store { shown, client, manager, namespace, ok: AtomicBool::new(false), last_error: Mutex::new(None) };
        match store.ping().await {
            Ok(()) => tracing::info!(store = %store.shown, namespace = %store.namespace, "the shared store answers"),
            Err(error) if optional => {
                tracing::warn!(error = %error, "starting without the shared store (--store-optional): task methods fail until it answers")
            }
            Err(error) => return Err(error),
        }
        Ok(store)
    }

    /// The store's URL as logs and errors show it (no password).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Whether the last call reached the store.
    pub fn is_ok(&self) -> bool {
        self.ok.load(Ordering::Relaxed)
    }

    /// How the store is doing.
    pub fn health(&self) -> StoreHealth {
        let last = self.last_error.lock().unwrap_or_else(|e| e.into_inner()).clone();
        StoreHealth {
            url: self.shown.clone(),
            ok: self.is_ok(),
            last_error_seconds_ago: last.as_ref().map(|(_, at)| at.elapsed().as_secs()),
            last_error: last.map(|(error, _)| error),
        }
    }

    /// Checks that the store answers.
    ///
    /// # Errors
    /// It does not, in time.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let mut connection = self.manager.clone();
        self.call(async move { redis::cmd("PING").query_async::<String>(&mut connection).await }).await.map(drop)
    }

    /// A key of this cluster's namespace.
    fn key(&self, parts: &[&str]) -> String {
        let mut key = self.namespace.clone();
        for part in parts {
            key.push(':');
            key.push_str(part);
        }
        key
    }

    /// Runs one call with the deadline, recording how the store is doing.
    async fn call<T>(&self, work: impl std::future::Future<Output = redis::RedisResult<T>>) -> Result<T, StoreError> {
        let outcome = match tokio::time::timeout(STORE_TIMEOUT, work).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(StoreError::Unavailable(self.shown.clone(), error.to_string())),
            Err(_) => Err(StoreError::Timeout(self.shown.clone(), STORE_TIMEOUT)),
        };
        match &outcome {
            Ok(_) => {
                if !self.ok.swap(true, Ordering::Relaxed) {
                    tracing::info!(store = %self.shown, "the shared store answers again");
                }
            }
            Err(error) => {
                if self.ok.swap(false, Ordering::Relaxed) {
                    tracing::warn!(error = %error, "the shared store stopped answering: task methods fail, plain calls go on");
                }
                *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some((error.to_string(), Instant::now()));
            }
        }
        outcome
    }

    fn connection(&self) -> ConnectionManager {
        self.manager.clone()
    }
}

/// `url` without its password.
fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return crate::escape::escape(&crate::escape::shorten(url)) };
    let rest = match rest.rsplit_once('@') {
        Some((_, host)) => format!("***@{host}"),
        None => rest.to_owned(),
    };
    crate::escape::escape(&crate::escape::shorten(&format!("{scheme}://{rest}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_url_is_shown_without_its_password() {
        assert_eq!(shown("redis://:hunter2@10.0.0.5:6379/0"), "redis://***@10.0.0.5:6379/0");
        assert_eq!(shown("rediss://user:pw@cache:6380"), "rediss://***@cache:6380");
        assert_eq!(shown("unix:///run/redis.sock"), "unix:///run/redis.sock");
        assert_eq!(shown("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
    }

    #[tokio::test]
    async fn a_url_that_is_not_a_store_is_refused_and_an_unreachable_store_is_named() {
        assert!(matches!(Store::open("http://example.com", b"key material of 32 bytes or more", false).await, Err(StoreError::Url(_))));
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a port");
        let url = format!("redis://:pw@127.0.0.1:{port}");
        match Store::open(&url, b"key material of 32 bytes or more", false).await {
            Err(StoreError::Unavailable(shown, _)) => assert_eq!(shown, format!("redis://***@127.0.0.1:{port}")),
            other => panic!("{other:?}"),
        }
        let degraded = Store::open(&url, b"key material of 32 bytes or more", true).await.expect("optional");
        assert!(!degraded.is_ok());
        assert!(degraded.health().last_error.is_some());
    }
}
