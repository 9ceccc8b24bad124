//! A real `redis-server` (Debian package `redis-server`) on a free loopback port, without
//! persistence and with a memory bound, for the tests of replicas sharing a store; it can be
//! stopped and started again on the same port.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use tokio::process::{Child, Command};

use crate::{WAIT, free_port, installed_tool};

/// A running `redis-server`.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    binary: std::path::PathBuf,
}

impl RedisServer {
    /// Starts one on a free port; `None` (the test is skipped) when `redis-server` is missing
    /// outside CI.
    pub async fn start() -> Result<Option<RedisServer>> {
        let Some(binary) =
            installed_tool("redis-server", "redis-server").or_else(|| Some("/usr/bin/redis-server".into()).filter(|p: &std::path::PathBuf| p.is_file()))
        else {
            return Ok(None);
        };
        let mut server = RedisServer { child: None, port: free_port(), binary };
        server.restart().await?;
        Ok(Some(server))
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops it at once (its data is gone: nothing is persisted).
    pub async fn stop(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill().await.context("kill redis-server")?;
        }
        Ok(())
    }

    /// Starts it (again) on its port and waits until it answers.
    pub async fn restart(&mut self) -> Result<()> {
        self.stop().await?;
        let child = Command::new(&self.binary)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--maxmemory", "256mb"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("start redis-server")?;
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Ok(mut stream) = tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut reply = [0u8; 7];
                if stream.write_all(b"PING\r\n").await.is_ok()
                    && tokio::time::timeout(Duration::from_secs(1), stream.read_exact(&mut reply)).await.is_ok_and(|r| r.is_ok())
                    && &reply == b"+PONG\r\n"
                {
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() > deadline {
                bail!("redis-server did not answer in time");
            }
            // The server has no other way to say it is up: polled, within the deadline.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
