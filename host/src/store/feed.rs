//! The feed between replicas: changes one replica publishes and every replica hears, and task
//! cancellations the replica running the task hears.
//!
//! Delivery is at most once (Redis pub/sub): a replica that was cut off from the store may have
//! missed messages, so once it is subscribed again it is told `Resync`, and its listeners are
//! told that everything they follow may have changed. Messages longer than `MAX_FEED_MESSAGE`
//! are dropped unread.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use super::{Store, StoreError};

/// The longest feed message read.
pub const MAX_FEED_MESSAGE: usize = 1 << 20;
/// The longest wait between two attempts to subscribe again.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// What a replica hears from the feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedEvent {
    /// A change another replica published (its payload).
    Change(String),
    /// Task `id` was cancelled.
    Cancel(String),
    /// Task `id` was handed over by a replica shutting down: any replica may claim it.
    Orphan(String),
    /// The subscription was lost and is back: messages may have been missed.
    Resync,
}

impl Store {
    fn changes_channel(&self) -> String {
        self.key(&["changes"])
    }

    /// Publishes a change to every replica.
    ///
    /// # Errors
    /// The store is unavailable.
    pub async fn publish(&self, payload: &str) -> Result<(), StoreError> {
        let (channel, payload) = (self.changes_channel(), payload.to_owned());
        let mut connection = self.connection();
        self.call(async move { redis::cmd("PUBLISH").arg(channel).arg(payload).query_async::<i64>(&mut connection).await }).await.map(drop)
    }

    /// Follows the feed until the process ends, handing each event to `deliver`. A lost
    /// subscription is tried again with backoff (100 ms, doubling, at most 5 s), and `Resync`
    /// is delivered once it is back.
    pub fn follow(self: &Arc<Self>, deliver: impl Fn(FeedEvent) + Send + Sync + 'static) -> tokio::task::JoinHandle<()> {
        let store = Arc::clone(self);
        tokio::spawn(async move {
            let (changes, cancels, orphans) = (store.changes_channel(), store.cancel_channel(), store.orphan_channel());
            let mut backoff = Duration::from_millis(100);
            let mut lost = false;
            loop {
                let subscribed = tokio::time::timeout(super::CONNECT_TIMEOUT, async {
                    let mut pubsub = store.client.get_async_pubsub().await?;
                    pubsub.subscribe(&changes).await?;
                    pubsub.subscribe(&cancels).await?;
                    pubsub.subscribe(&orphans).await?;
                    Ok::<_, redis::RedisError>(pubsub)
                })
                .await;
                let pubsub = match subscribed {
                    Ok(Ok(pubsub)) => pubsub,
                    Ok(Err(error)) => {
                        if !lost {
                            tracing::warn!(store = %store.shown, error = %error, "cannot follow the shared store's feed; trying again with backoff");
                            lost = true;
                        }
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                        continue;
                    }
                    Err(_) => {
                        lost = true;
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                        continue;
                    }
                };
                if lost {
                    tracing::info!(store = %store.shown, "following the shared store's feed again; listeners are told everything may have changed");
                    deliver(FeedEvent::Resync);
                }
                backoff = Duration::from_millis(100);
                let mut messages = pubsub.into_on_message();
                while let Some(message) = messages.next().await {
                    let payload = message.get_payload_bytes();
                    if payload.len() > MAX_FEED_MESSAGE {
                        tracing::warn!(bytes = payload.len(), "a feed message longer than the bound was dropped");
                        continue;
                    }
                    let Ok(payload) = std::str::from_utf8(payload) else { continue };
                    let channel = message.get_channel_name();
                    let event = if channel == cancels {
                        FeedEvent::Cancel(payload.to_owned())
                    } else if channel == orphans {
                        FeedEvent::Orphan(payload.to_owned())
                    } else {
                        FeedEvent::Change(payload.to_owned())
                    };
                    deliver(event);
                }
                tracing::warn!(store = %store.shown, "the shared store's feed was cut off; subscribing again");
                lost = true;
            }
        })
    }
}
