//! Outgoing HTTP as the host dials it: resolved addresses vetted, user info refused, secrets
//! added for exactly their target, response bytes and open requests bounded per call.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use paddock::policy::{EgressRules, Grant, RefusalKind, SecretGrant, SecretSource, Target};
use paddock::runtime::{FixedResolver, Runtime, RuntimeOptions};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A runtime whose resolver answers from `resolver` (and the test cache).
fn runtime_resolving(resolver: FixedResolver) -> Runtime {
    let cache = repo_root().join("target/paddock-test-cache");
    Runtime::new(RuntimeOptions { cache_dir: Some(cache), max_instances: 64, resolver: Some(Arc::new(resolver)), ..RuntimeOptions::default() })
        .expect("runtime")
}

/// A loopback server that answers every request with 200 and, as the body, the request head it
/// received (so a test sees exactly the headers that reached the wire).
async fn echo_server() -> SocketAddr {
    serve(|head| head).await
}

/// A loopback server that answers every request with a body of `bytes` bytes.
async fn sized_server(bytes: usize) -> SocketAddr {
    serve(move |_| "x".repeat(bytes)).await
}

async fn serve(body: impl Fn(String) -> String + Send + Sync + 'static) -> SocketAddr {
    let body = Arc::new(body);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body = body(String::from_utf8_lossy(&head).into_owned());
                let reply = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    addr
}

fn network(patterns: &[String]) -> Grant {
    Grant { network: EgressRules::parse(patterns).expect("patterns"), ..Grant::default() }
}

#[tokio::test]
async fn a_granted_name_that_resolves_to_loopback_is_refused_and_its_ip_literal_twin_works() {
    let server = echo_server().await;
    let port = server.port();
    let rt = runtime_resolving(FixedResolver::new().with("api.test", &[LOOPBACK]).with("localhost", &[LOOPBACK]));

    let by_name = load(&rt, "by-name", network(&[format!("http://api.test:{port}")])).await;
    let refused = error_text(call(&by_name, "http_get", json!({"url": format!("http://api.test:{port}/")})).await);
    assert!(refused.contains("DestinationIpProhibited"), "{refused}");
    assert_eq!(by_name.refusals().count(RefusalKind::Network), 1, "{:?}", by_name.refusals().snapshot());

    let by_literal = load(&rt, "by-literal", network(&[format!("http://127.0.0.1:{port}")])).await;
    let answered = ok_text(call(&by_literal, "http_get", json!({"url": format!("http://127.0.0.1:{port}/")})).await);
    assert!(answered.starts_with("200 GET / HTTP/1.1"), "{answered}");
    assert_eq!(by_literal.refusals().count(RefusalKind::Network), 0);

    let by_localhost = load(&rt, "by-localhost", network(&[format!("http://localhost:{port}")])).await;
    let answered = ok_text(call(&by_localhost, "http_get", json!({"url": format!("http://localhost:{port}/")})).await);
    assert!(answered.starts_with("200 "), "`localhost` names loopback: {answered}");

    let by_range = load(&rt, "by-range", network(&[format!("http://api.test:{port}"), format!("http://127.0.0.0/8:{port}")])).await;
    let answered = ok_text(call(&by_range, "http_get", json!({"url": format!("http://api.test:{port}/")})).await);
    assert!(answered.starts_with("200 "), "a range naming the address admits it: {answered}");
}

#[tokio::test]
async fn metadata_private_and_mapped_answers_are_never_dialled() {
    let rt = runtime_resolving(
        FixedResolver::new()
            .with("metadata.test", &["169.254.169.254".parse().expect("ip")])
            .with("mapped.test", &["::ffff:127.0.0.1".parse().expect("ip")])
            .with("private.test", &["10.0.0.1".parse().expect("ip"), "fd00::1".parse().expect("ip")]),
    );
    let plugin = load(&rt, "prober", network(&["http://metadata.test".into(), "http://mapped.test".into(), "http://private.test".into()])).await;
    for host in ["metadata.test", "mapped.test", "private.test"] {
        let refused = error_text(call(&plugin, "http_get", json!({"url": format!("http://{host}/latest/meta-data/")})).await);
        assert!(refused.contains("DestinationIpProhibited"), "{host}: {refused}");
    }
    assert_eq!(plugin.refusals().count(RefusalKind::Network), 4, "one per address: {:?}", plugin.refusals().snapshot());
}

#[tokio::test]
async fn user_info_in_a_url_is_refused_even_for_a_granted_target() {
    let server = echo_server().await;
    let port = server.port();
    let plugin = load(&runtime(), "userinfo", network(&[format!("http://127.0.0.1:{port}")])).await;
    let refused = error_text(call(&plugin, "http_get", json!({"url": format!("http://admin:pw@127.0.0.1:{port}/")})).await);
    assert!(refused.contains("HttpRequestDenied"), "{refused}");
    assert_eq!(plugin.refusals().count(RefusalKind::Network), 1);
    let answered = ok_text(call(&plugin, "http_get", json!({"url": format!("http://127.0.0.1:{port}/")})).await);
    assert!(answered.starts_with("200 "), "{answered}");
}

#[tokio::test]
async fn a_secret_reaches_exactly_its_target_and_replaces_what_the_plugin_set() {
    let with_secret = echo_server().await;
    let other = echo_server().await;
    let token = tempfile::NamedTempFile::new().expect("token file");
    std::fs::write(token.path(), "s3cret-value\n").expect("write token");
    let mut grant = network(&[format!("http://127.0.0.1:{}", with_secret.port()), format!("http://127.0.0.1:{}", other.port())]);
    grant.secrets.push(SecretGrant {
        target: Target::new("http", "127.0.0.1", with_secret.port()),
        header: "authorization".into(),
        source: SecretSource::File(token.path().to_path_buf()),
        prefix: "Bearer ".into(),
    });
    let plugin = load(&runtime(), "secretive", grant).await;

    let seen = ok_text(call(&plugin, "http_get", json!({"url": format!("http://127.0.0.1:{}/", with_secret.port()), "header": "Authorization: forged"})).await)
        .to_ascii_lowercase();
    assert!(seen.contains("authorization: bearer s3cret-value\r\n"), "{seen}");
    assert!(!seen.contains("forged"), "the plugin's own header is replaced: {seen}");
    assert_eq!(seen.matches("authorization:").count(), 1, "{seen}");

    let elsewhere = ok_text(call(&plugin, "http_get", json!({"url": format!("http://127.0.0.1:{}/", other.port())})).await);
    assert!(!elsewhere.to_ascii_lowercase().contains("authorization") && !elsewhere.contains("s3cret"), "{elsewhere}");
    let env = call(&plugin, "env", json!({"name": "authorization"})).await.expect("env call");
    assert!(!format!("{env:?}").contains("s3cret"));
}

#[tokio::test]
async fn response_bytes_are_charged_to_the_call() {
    let big = sized_server(12 << 20).await;
    let small = sized_server(1 << 20).await;
    let mut grant = network(&[format!("http://127.0.0.1:{}", big.port()), format!("http://127.0.0.1:{}", small.port())]);
    grant.limits.memory = 8 << 20;
    let plugin = load(&runtime(), "downloader", grant).await;
    let refused = error_text(call(&plugin, "http_get", json!({"url": format!("http://127.0.0.1:{}/", big.port()), "discard": true})).await);
    // The guest sees its body stream fail; the host records why.
    assert!(refused.starts_with("http: StreamError::LastOperationFailed"), "{refused}");
    assert_eq!(plugin.refusals().count(RefusalKind::Resources), 1, "{:?}", plugin.refusals().snapshot());
    let fetched = ok_text(call(&plugin, "http_get", json!({"url": format!("http://127.0.0.1:{}/", small.port()), "discard": true})).await);
    assert_eq!(fetched, format!("200 {}", 1 << 20));
}

#[tokio::test]
async fn one_call_holds_at_most_sixteen_requests_open() {
    let server = echo_server().await;
    let plugin = load(&runtime(), "fanout", network(&[format!("http://127.0.0.1:{}", server.port())])).await;
    let url = format!("http://127.0.0.1:{}/", server.port());
    let answer = ok_text(call(&plugin, "http_parallel", json!({"url": url, "count": 20})).await);
    assert!(answer.starts_with("16 answered, 4 failed") && answer.contains("ConnectionLimitReached"), "{answer}");
    assert_eq!(plugin.refusals().count(RefusalKind::Resources), 4);
    let answer = ok_text(call(&plugin, "http_parallel", json!({"url": url, "count": 16})).await);
    assert!(answer.starts_with("16 answered, 0 failed"), "{answer}");
}
