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
