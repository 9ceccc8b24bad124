//! Grants with a real component: environment, preopened directories and outgoing HTTP.

use std::net::SocketAddr;

use paddock::policy::{EgressRules, FsGrant, FsMode, Grant};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

#[tokio::test]
async fn only_granted_env_vars_are_visible() {
    assert!(std::env::var_os("PATH").is_some(), "the test needs PATH set in the host environment");
    let rt = runtime();
    let mut grant = Grant::default();
    grant.env.insert("GRANTED_VAR".into(), "granted-value".into());
    let plugin = load(&rt, "fixture", grant).await;
    assert_eq!(ok_text(call(&plugin, "env", json!({"name": "GRANTED_VAR"})).await), "granted-value");
    for name in ["PATH", "HOME", "CARGO_MANIFEST_DIR"] {
        let hidden = error_text(call(&plugin, "env", json!({"name": name})).await);
        assert!(hidden.contains("not found"), "{name}: {hidden}");
    }
    let bare = load(&rt, "bare", Grant::default()).await;
    error_text(call(&bare, "env", json!({"name": "GRANTED_VAR"})).await);
}

struct Dirs {
    rw: tempfile::TempDir,
    ro: tempfile::TempDir,
}

fn files_grant() -> (Grant, Dirs) {
    let rw = tempfile::tempdir().expect("rw");
    let ro = tempfile::tempdir().expect("ro");
    std::fs::write(ro.path().join("notes.txt"), "read-only notes").expect("seed");
    let mut grant = Grant::default();
    grant.files.push(FsGrant { host: rw.path().canonicalize().expect("rw"), guest: "/data".into(), mode: FsMode::ReadWrite });
    grant.files.push(FsGrant { host: ro.path().canonicalize().expect("ro"), guest: "/ro".into(), mode: FsMode::ReadOnly });
    (grant, Dirs { rw, ro })
}

#[tokio::test]
async fn files_inside_the_grant_are_readable_and_writable_as_granted() {
    let rt = runtime();
    let (grant, dirs) = files_grant();
    let plugin = load(&rt, "fixture", grant).await;
    assert_eq!(ok_text(call(&plugin, "read", json!({"path": "/ro/notes.txt"})).await), "read-only notes");
    assert_eq!(ok_text(call(&plugin, "write", json!({"path": "/data/new.txt", "content": "fresh"})).await), "written");
    assert_eq!(std::fs::read_to_string(dirs.rw.path().join("new.txt")).expect("on host"), "fresh");
    assert_eq!(ok_text(call(&plugin, "list", json!({"path": "/data"})).await), "new.txt");
    let denied = error_text(call(&plugin, "write", json!({"path": "/ro/evil.txt", "content": "x"})).await);
    assert!(denied.starts_with("write:"), "{denied}");
    assert!(!dirs.ro.path().join("evil.txt").exists(), "the read-only grant was written to");
}

#[tokio::test]
async fn files_outside_the_grant_are_invisible() {
    let rt = runtime();
    let (grant, _dirs) = files_grant();
    let plugin = load(&rt, "fixture", grant).await;
    for path in ["/etc/passwd", "/data/../../etc/passwd", "/ro/../data/../../../etc/hostname", "../etc/passwd", "/"] {
        let out = error_text(call(&plugin, "read", json!({"path": path})).await);
        assert!(!out.contains("root:"), "{path} leaked: {out}");
    }
    let listed = call(&plugin, "list", json!({"path": "/"})).await.expect("result");
    let shown = text(&listed);
    assert!(!shown.contains("etc") && !shown.contains("usr"), "the host root is visible: {shown}");
    let bare = load(&rt, "bare", Grant::default()).await;
    error_text(call(&bare, "list", json!({"path": "/data"})).await);
}

/// A loopback HTTP server answering every request with 200 and `body`.
async fn http_server(body: &'static str) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let _ = socket.read(&mut buf).await;
                let reply = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn http_reaches_a_granted_target_and_is_denied_others() {
    let granted = http_server("hello from the granted server").await;
    let other = http_server("must never be read").await;
    let rt = runtime();
    let grant = Grant { network: EgressRules::parse(&[format!("http://127.0.0.1:{}", granted.port())]).expect("pattern"), ..Grant::default() };
    let plugin = load(&rt, "fixture", grant).await;
    let ok = ok_text(call(&plugin, "http_get", json!({"url": format!("http://127.0.0.1:{}/hello", granted.port())})).await);
    assert_eq!(ok, "200 hello from the granted server");
    for url in
        [format!("http://127.0.0.1:{}/", other.port()), format!("http://localhost:{}/", granted.port()), format!("https://127.0.0.1:{}/", granted.port())]
    {
        let refused = error_text(call(&plugin, "http_get", json!({"url": url})).await);
        assert!(refused.contains("HttpRequestDenied"), "{url}: {refused}");
    }
    let bare = load(&rt, "bare", Grant::default()).await;
    let refused = error_text(call(&bare, "http_get", json!({"url": format!("http://127.0.0.1:{}/", granted.port())})).await);
    assert!(refused.contains("HttpRequestDenied"), "{refused}");
}
