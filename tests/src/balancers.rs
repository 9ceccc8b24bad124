//! Real load balancers in front of a cluster, from the Debian packages (`nginx`, `haproxy`),
//! started on a free loopback port with the recipes shipped in `host/deploy/`: each recipe is
//! used as written, with only its addresses put in (its replicas `paddock-N.paddock:8080`
//! become the cluster's loopback ports, and its listening port the balancer's).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use tokio::process::{Child, Command};

use crate::{WAIT, free_port, installed_tool, repo_root};

/// A running load balancer.
#[derive(Debug)]
pub struct Balancer {
    _child: Child,
    /// The port it listens on.
    pub port: u16,
    _dir: tempfile::TempDir,
}

/// A recipe of `host/deploy/`, with the replicas at `ports` and itself listening on `listen`.
pub fn render(recipe: &str, ports: &[u16], listen: u16) -> Result<String> {
    let mut text = std::fs::read_to_string(repo_root().join("host/deploy").join(recipe)).with_context(|| format!("read {recipe}"))?;
    for (index, port) in ports.iter().enumerate() {
        text = text.replace(&format!("paddock-{index}.paddock:8080"), &format!("127.0.0.1:{port}"));
    }
    Ok(text.replace("listen 80;", &format!("listen 127.0.0.1:{listen};")).replace("bind :80", &format!("bind 127.0.0.1:{listen}")))
}

impl Balancer {
    /// nginx with `recipe` in front of `ports`; `None` when nginx is missing outside CI.
    pub async fn nginx(recipe: &str, ports: &[u16]) -> Result<Option<Balancer>> {
        let Some(nginx) = installed_tool("nginx", "nginx").or_else(|| existing("/usr/sbin/nginx")) else { return Ok(None) };
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join("logs"))?;
        let port = free_port();
        std::fs::write(dir.path().join("nginx.conf"), render(recipe, ports, port)?)?;
        let prefix = dir.path().display().to_string();
        // As root, the workers keep root's user (the temporary files are in a root-owned folder).
        let user = if rustix::process::getuid().is_root() { "user root;" } else { "" };
        let globals = format!("daemon off; error_log stderr; pid {prefix}/nginx.pid; {user}");
        let child = Command::new(nginx)
            .args(["-p", &prefix, "-c", &format!("{prefix}/nginx.conf"), "-g", &globals])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("start nginx")?;
        Balancer::listening(child, port, dir).await.map(Some)
    }

    /// HAProxy with `recipe` in front of `ports`; `None` when haproxy is missing outside CI.
    pub async fn haproxy(recipe: &str, ports: &[u16]) -> Result<Option<Balancer>> {
        let Some(haproxy) = installed_tool("haproxy", "haproxy").or_else(|| existing("/usr/sbin/haproxy")) else { return Ok(None) };
        let dir = tempfile::tempdir()?;
        let port = free_port();
        let config = dir.path().join("haproxy.cfg");
        std::fs::write(&config, render(recipe, ports, port)?)?;
        let child = Command::new(haproxy)
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("start haproxy")?;
        Balancer::listening(child, port, dir).await.map(Some)
    }

    async fn listening(child: Child, port: u16, dir: tempfile::TempDir) -> Result<Balancer> {
        let deadline = tokio::time::Instant::now() + WAIT;
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            if tokio::time::Instant::now() > deadline {
                bail!("the load balancer did not listen on {port} in time");
            }
            // It has no other way to say it listens: polled, within the deadline.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(Balancer { _child: child, port, _dir: dir })
    }

    /// `http://localhost:PORT` + `path` (a localhost name, as the conformance suite needs).
    pub fn url(&self, path: &str) -> String {
        format!("http://localhost:{}{path}", self.port)
    }
}

fn existing(path: &str) -> Option<PathBuf> {
    Path::new(path).is_file().then(|| PathBuf::from(path))
}
