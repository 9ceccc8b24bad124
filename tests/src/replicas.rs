//! Several `paddock serve --http` replicas on loopback, sharing a state key and a plugins
//! folder, each told where the others are (`--peer ID=URL`): the cluster the replica tests and
//! the load balancers in front of it run against.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::free_port;
use crate::http::HttpHost;

/// POSTs `body` to `/mcp` of `host` as a 2025-11-25 client, in `session` when given, accepting
/// `accept`.
pub async fn legacy_post(host: &HttpHost, session: Option<&str>, accept: &str, body: &serde_json::Value) -> Result<reqwest::Response> {
    let mut request = reqwest::Client::new()
        .post(host.url("/mcp"))
        .header("accept", accept)
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    Ok(request.body(body.to_string()).send().await?)
}

/// Replicas `paddock-0`, `paddock-1`, … sharing a key and a plugins folder.
#[derive(Debug)]
pub struct Cluster {
    replicas: Vec<Option<HttpHost>>,
    ports: Vec<u16>,
    dir: PathBuf,
    extra: Vec<String>,
    keys: tempfile::TempDir,
}

impl Cluster {
    /// Starts `count` replicas serving `dir`, each with `extra` arguments, and waits until each
    /// is ready.
    pub async fn start(dir: &Path, count: usize, extra: &[&str]) -> Result<Cluster> {
        let keys = tempfile::tempdir()?;
        let key = keys.path().join("state.key");
        std::fs::write(&key, [0x5a_u8; 48])?;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))?;
        let ports = (0..count).map(|_| free_port()).collect();
        let mut cluster = Cluster { replicas: Vec::new(), ports, dir: dir.to_path_buf(), extra: extra.iter().map(|s| (*s).to_owned()).collect(), keys };
        for index in 0..count {
            let host = cluster.spawn(index).await?;
            cluster.replicas.push(Some(host));
        }
        for host in cluster.replicas.iter().flatten() {
            host.wait_ready().await?;
        }
        Ok(cluster)
    }

    /// The shared state key file.
    pub fn key_file(&self) -> PathBuf {
        self.keys.path().join("state.key")
    }

    /// The arguments replica `index` is started with.
    pub fn args_of(&self, index: usize) -> Vec<String> {
        let mut args = vec!["--replica-id".to_owned(), Cluster::id(index), "--state-key-file".to_owned(), self.key_file().display().to_string()];
        for (other, port) in self.ports.iter().enumerate().filter(|(other, _)| *other != index) {
            args.push("--peer".to_owned());
            args.push(format!("{}=http://127.0.0.1:{port}", Cluster::id(other)));
        }
        args.extend(self.extra.iter().cloned());
        args
    }

    async fn spawn(&self, index: usize) -> Result<HttpHost> {
        let args = self.args_of(index);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        HttpHost::spawn(&self.dir, &format!("127.0.0.1:{}", self.ports[index]), &args, &[]).await
    }

    /// The id of replica `index` (`paddock-N`, as in the recipes of `host/deploy/`).
    pub fn id(index: usize) -> String {
        format!("paddock-{index}")
    }

    /// Every replica's port.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// Replica `index` (panics when it was stopped).
    pub fn replica(&self, index: usize) -> &HttpHost {
        self.replicas[index].as_ref().expect("the replica is running")
    }

    /// Replica `index`, to stop it or wait for its exit.
    pub fn replica_mut(&mut self, index: usize) -> &mut HttpHost {
        self.replicas[index].as_mut().expect("the replica is running")
    }

    /// The port of replica `index` (it keeps it across a restart).
    pub fn port(&self, index: usize) -> u16 {
        self.ports[index]
    }

    /// How many replicas the cluster has.
    pub fn len(&self) -> usize {
        self.ports.len()
    }

    /// Whether the cluster has no replicas.
    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }

    /// Kills replica `index` at once (SIGKILL), as a crashed machine would stop.
    pub async fn kill(&mut self, index: usize) -> Result<()> {
        let mut host = self.replicas[index].take().context("the replica is running")?;
        host.kill().await
    }

    /// Starts replica `index` again on its port and waits until it is ready.
    pub async fn restart(&mut self, index: usize) -> Result<()> {
        let host = self.spawn(index).await?;
        host.wait_ready().await?;
        self.replicas[index] = Some(host);
        Ok(())
    }

    /// Every replica's log, one after the other.
    pub fn logs(&self) -> String {
        self.replicas.iter().enumerate().filter_map(|(i, h)| h.as_ref().map(|h| format!("--- r{i}\n{}", h.log_text()))).collect::<Vec<_>>().join("\n")
    }
}
