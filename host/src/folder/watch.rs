//! When the live folder is looked at again: on file-system events (`notify`: inotify on Linux)
//! in the plugins folder and the main configuration file's folder, or by polling every
//! `POLL_EVERY` where events are not available; on SIGHUP at any time; and once a file that was
//! still being written has had time to settle. A burst of events is one look: the look waits
//! until the folder has been quiet for `QUIET`, and never longer than `BURST_AT_MOST` after the
//! burst began, so a writer that never stops still cannot hold changes back for long.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Folder;
use crate::mcp::ServerState;

/// How often the folder is read when file-system events are not available.
pub const POLL_EVERY: Duration = Duration::from_secs(2);
/// How long the folder must be quiet after an event before it is looked at.
const QUIET: Duration = Duration::from_millis(100);
/// The longest a burst of events can put a look off.
const BURST_AT_MOST: Duration = Duration::from_secs(1);

/// What makes the folder be looked at again, besides SIGHUP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// File-system events, falling back to polling where they are not available.
    Events,
    /// Reading the folder every `POLL_EVERY`.
    Poll,
    /// Nothing but SIGHUP.
    Off,
}

/// Keeps `server` serving what `folder` holds until `stop`.
///
/// SIGHUP is listened for from the moment this is called, not from when the returned future is
/// first polled: a server marked ready right after spawning it must never meet a SIGHUP whose
/// default action still ends the process.
pub fn keep_live(folder: Arc<Folder>, server: Arc<ServerState>, watch: Watch, stop: CancellationToken) -> impl Future<Output = ()> {
    let hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(signal) => Some(signal),
        Err(err) => {
            tracing::warn!(error = %err, "cannot listen for SIGHUP");
            None
        }
    };
    watch_folder(folder, server, watch, stop, hangup)
}

async fn watch_folder(folder: Arc<Folder>, server: Arc<ServerState>, watch: Watch, stop: CancellationToken, mut hangup: Option<tokio::signal::unix::Signal>) {
    let (events, mut heard) = mpsc::channel::<()>(1);
    let mut polling = watch == Watch::Poll;
    // Dropping the watcher stops its events: it lives as long as this loop.
    let _watcher = match watch {
        Watch::Events => match watcher(&folder, events) {
            Ok(watcher) => Some(watcher),
            Err(err) => {
                tracing::warn!(error = %err, every_seconds = POLL_EVERY.as_secs(), "file-system events are not available for the plugins folder; reading it at an interval instead");
                polling = true;
                None
            }
        },
        Watch::Poll | Watch::Off => None,
    };
    let mut poll = tokio::time::interval_at(Instant::now() + POLL_EVERY, POLL_EVERY);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Watching, once at once: whatever changed between the first look and the watcher's start.
    let mut again: Option<Instant> = (watch != Watch::Off).then(Instant::now);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            Some(()) = heard.recv() => quiet(&mut heard).await,
            Some(()) = async { match hangup.as_mut() { Some(signal) => signal.recv().await, None => std::future::pending().await } } => {
                tracing::info!("SIGHUP: looking at the plugins folder again");
            }
            _ = poll.tick(), if polling => {}
            () = sleep_until(again), if again.is_some() => {}
        }
        let look = folder.refresh(&server).await;
        again = look.again_after.map(|wait| Instant::now() + wait);
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Waits until no event has come for `QUIET`, or `BURST_AT_MOST` has passed.
async fn quiet(heard: &mut mpsc::Receiver<()>) {
    let began = Instant::now();
    while began.elapsed() < BURST_AT_MOST {
        match tokio::time::timeout(QUIET, heard.recv()).await {
            Ok(Some(())) => {}
            Ok(None) | Err(_) => return,
        }
    }
}

/// Why the folder cannot be watched for events.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch `{}`: {source}", path.display())]
pub struct WatchError {
    path: PathBuf,
    source: notify::Error,
}

/// Watches the plugins folder, and the main configuration file's folder when it is elsewhere,
/// sending one wake-up per batch of changes (the channel holds one: more coalesce).
fn watcher(folder: &Folder, events: mpsc::Sender<()>) -> Result<notify::RecommendedWatcher, WatchError> {
    use notify::Watcher as _;
    use notify::event::{AccessKind, AccessMode, EventKind};
    let handler = move |event: notify::Result<notify::Event>| {
        let wakes = match event {
            // Reading a file (this process does, to load it) is not a change.
            Ok(event) => !matches!(event.kind, EventKind::Access(kind) if kind != AccessKind::Close(AccessMode::Write)),
            Err(_) => true,
        };
        if wakes {
            let _ = events.try_send(());
        }
    };
    let mut watcher = notify::recommended_watcher(handler).map_err(|source| WatchError { path: folder.dir().to_path_buf(), source })?;
    let mut folders = vec![folder.dir().to_path_buf()];
    if let Some(parent) = folder.config_file().parent().filter(|p| !p.as_os_str().is_empty())
        && !same_dir(parent, folder.dir())
    {
        folders.push(parent.to_path_buf());
    }
    for path in folders {
        watcher.watch(&path, notify::RecursiveMode::NonRecursive).map_err(|source| WatchError { path, source })?;
    }
    Ok(watcher)
}

fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
