//! `paddock serve`'s options for running as one of several replicas: its id, its peers, and the
//! shared key material everything shared is keyed by.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::replica::{Peers, Replica, ReplicaId};

/// Running as one of several replicas.
#[derive(Debug, clap::Args)]
pub(super) struct ReplicaArgs {
    /// This replica's id, at the head of every session and task id it mints (a DNS label, for
    /// example `paddock-0`). Default: the host name, made into one.
    #[arg(long, value_name = "ID")]
    pub(super) replica_id: Option<String>,
    /// Another replica: `ID=URL` (repeatable, for example `paddock-1=http://10.0.0.2:8080`), or a
    /// URL template naming every replica (`http://{replica}.paddock:8080`, for a Kubernetes
    /// headless Service). A request for a session another replica owns is forwarded there;
    /// only these are ever dialled. Needs --state-key-file shared by every replica.
    #[arg(long = "peer", value_name = "ID=URL|TEMPLATE", requires = "state_key_file")]
    pub(super) peers: Vec<String>,
    /// The store replicas share: 2026-07-28 tasks (answered by any replica), list changes and
    /// resource updates (heard by every replica's clients), rate limits and approvals. A Redis
    /// server or one that speaks its protocol: `redis://[:PASSWORD@]HOST[:PORT][/DB]`,
    /// `rediss://…` (TLS) or `unix:///PATH`. The URL may instead be given in PADDOCK_STORE (a
    /// password on the command line is visible to other users). Needs --state-key-file shared by
    /// every replica. Without it, each process keeps its own.
    #[arg(long, value_name = "URL", requires = "state_key_file")]
    pub(super) store: Option<String>,
    /// Start even when the store does not answer (task methods fail with an error naming it
    /// until it does); without this, a store that does not answer at start stops the start.
    #[arg(long)]
    pub(super) store_optional: bool,
}

/// The shared store, when `--store` or PADDOCK_STORE names one: opened (and, unless
/// `--store-optional`, answering) before anything is served.
pub(super) async fn store(args: &ReplicaArgs, material: &[u8], key_file_given: bool) -> Result<Option<Arc<crate::store::Store>>> {
    let url = match (&args.store, std::env::var("PADDOCK_STORE")) {
        (Some(url), _) => url.clone(),
        (None, Ok(url)) if !url.is_empty() => {
            if !key_file_given {
                anyhow::bail!("PADDOCK_STORE names a shared store, which needs --state-key-file shared by every replica");
            }
            url
        }
        _ => {
            if args.store_optional {
                anyhow::bail!("--store-optional needs --store (or PADDOCK_STORE)");
            }
            return Ok(None);
        }
    };
    let store = crate::store::Store::open(&url, material, args.store_optional)
        .await
        .context("--store (fix: start the store, correct its URL, or pass --store-optional to start without it)")?;
    Ok(Some(Arc::new(store)))
}

/// The shared key material: the key file's bytes, or 32 bytes drawn now for a process on its own.
pub(super) fn key_material(state_key_file: Option<&Path>) -> Result<Vec<u8>> {
    match state_key_file {
        Some(path) => Ok(crate::input::key_material(path)?),
        None => {
            let mut material = vec![0u8; 32];
            getrandom::fill(&mut material).map_err(|e| crate::input::StateKeyError::Random(e.to_string()))?;
            Ok(material)
        }
    }
}

/// This replica, keyed by `material`.
pub(super) fn replica(args: &ReplicaArgs, material: &[u8]) -> Result<Arc<Replica>> {
    let id = match &args.replica_id {
        Some(id) => ReplicaId::parse(id).context("--replica-id")?,
        None => ReplicaId::from_hostname(),
    };
    let peers = Peers::parse(args.peers.iter().map(String::as_str))?;
    if peers.address(id.as_str()).is_some() && !args.peers.iter().any(|p| p.contains("{replica}")) {
        anyhow::bail!("--peer names this replica's own id `{id}` (fix: list only the other replicas)");
    }
    tracing::info!(replica = %id, peers = ?peers, "replica");
    Ok(Arc::new(Replica::new(id, material, peers)))
}
