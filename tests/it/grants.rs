//! Sample and fixture plugins against their grants: files, outgoing HTTP and environment.

use std::net::SocketAddr;

use paddock_tests::{PluginDir, StdioHost, first_text, fixture_wasm, sample_wasm};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A loopback HTTP server that answers every request with 200 and `body`; returns its address.
async fn http_server(body: &'static str) -> SocketAddr {
    serve_http(format!("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())).await
}

/// A loopback HTTP server that redirects every request to `location`.
async fn redirect_server(location: String) -> SocketAddr {
    serve_http(format!("HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")).await
}

/// A loopback HTTP server that answers every request with `reply`.
async fn serve_http(reply: String) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let reply = reply.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let _ = socket.read(&mut buf).await;
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    addr
}

struct FilesSetup {
    _plugins: PluginDir,
    rw: tempfile::TempDir,
    ro: tempfile::TempDir,
    host: StdioHost,
}

async fn files_host() -> FilesSetup {
    let rw = tempfile::tempdir().expect("rw dir");
    let ro = tempfile::tempdir().expect("ro dir");
    std::fs::write(ro.path().join("notes.txt"), "read-only notes").expect("seed ro");
    std::fs::write(rw.path().join("todo.txt"), "write here").expect("seed rw");
    let grant = format!(
        "files = [\n  {{ host = {:?}, guest = \"/data\", mode = \"rw\" }},\n  {{ host = {:?}, guest = \"/ro\", mode = \"ro\" }},\n]\n",
        rw.path(),
        ro.path()
    );
    let plugins = PluginDir::new().add("files", &sample_wasm("files")).write("files.toml", grant);
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");
    FilesSetup { _plugins: plugins, rw, ro, host }
}

fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

#[tokio::test]
async fn files_reads_and_writes_inside_its_grant() {
    let mut s = files_host().await;
    let read = s.host.call_tool("files_read_file", json!({"path": "/ro/notes.txt"})).await.expect("call");
    assert!(!is_error(&read), "{read}");
    assert!(first_text(&read).contains("read-only notes"), "{read}");

    let wrote = s.host.call_tool("files_write_file", json!({"path": "/data/new.txt", "content": "fresh"})).await.expect("call");
    assert!(!is_error(&wrote), "{wrote}");
    assert_eq!(std::fs::read_to_string(s.rw.path().join("new.txt")).expect("written on host"), "fresh");

    let listed = s.host.call_tool("files_list_dir", json!({"path": "/data"})).await.expect("call");
    assert!(listed.to_string().contains("todo.txt"), "{listed}");
}

#[tokio::test]
async fn files_cannot_write_to_a_read_only_grant() {
    let mut s = files_host().await;
    let wrote = s.host.call_tool("files_write_file", json!({"path": "/ro/evil.txt", "content": "x"})).await.expect("call");
    assert!(is_error(&wrote), "{wrote}");
    assert!(!s.ro.path().join("evil.txt").exists(), "the read-only grant was written to");
}

#[tokio::test]
async fn files_cannot_see_outside_its_grant() {
    let mut s = files_host().await;
    for path in ["/etc/passwd", "/data/../../etc/passwd", "/ro/../data/../../../etc/hostname", "../etc/passwd", "/"] {
        let read = s.host.call_tool("files_read_file", json!({"path": path})).await.expect("call");
        assert!(is_error(&read), "{path}: {read}");
        assert!(!read.to_string().contains("root:"), "{path} leaked host data: {read}");
    }
    let listed = s.host.call_tool("files_list_dir", json!({"path": "/"})).await.expect("call");
    let text = listed.to_string();
    assert!(!text.contains("etc") && !text.contains("usr"), "the host root is visible: {text}");
}

#[tokio::test]
async fn fetch_reaches_a_granted_target_and_is_refused_others() {
    let granted = http_server("hello from the granted server").await;
    let other = http_server("this must never be read").await;
    let grant = format!("network = [\"http://127.0.0.1:{}\"]\n", granted.port());
    let plugins = PluginDir::new().add("fetch", &sample_wasm("fetch")).write("fetch.toml", grant);
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");

    let ok = host.call_tool("fetch_get", json!({"url": format!("http://127.0.0.1:{}/hello", granted.port())})).await.expect("call");
    assert!(!is_error(&ok), "{ok}");
    assert!(ok.to_string().contains("hello from the granted server"), "{ok}");

    let refused = host.call_tool("fetch_get", json!({"url": format!("http://127.0.0.1:{}/", other.port())})).await.expect("call");
    assert!(is_error(&refused), "{refused}");
    assert!(refused.to_string().to_lowercase().contains("denied"), "{refused}");
    assert!(!refused.to_string().contains("never be read"));

    let ping = host.request("ping", json!({})).await.expect("alive");
    assert_eq!(ping["result"], json!({}));
}

#[tokio::test]
async fn fetch_follows_redirects_only_within_its_grant() {
    let inside = http_server("reached through a granted redirect").await;
    let outside = http_server("this must never be read").await;
    let to_inside = redirect_server(format!("http://127.0.0.1:{}/next", inside.port())).await;
    let to_outside = redirect_server(format!("http://127.0.0.1:{}/", outside.port())).await;
    let grant =
        format!("network = [\"http://127.0.0.1:{}\", \"http://127.0.0.1:{}\", \"http://127.0.0.1:{}\"]\n", inside.port(), to_inside.port(), to_outside.port());
    let plugins = PluginDir::new().add("fetch", &sample_wasm("fetch")).write("fetch.toml", grant);
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");

    let followed = host.call_tool("fetch_get", json!({"url": format!("http://127.0.0.1:{}/", to_inside.port())})).await.expect("call");
    assert!(!is_error(&followed), "{followed}");
    assert!(followed.to_string().contains("reached through a granted redirect"), "{followed}");

    let escaped = host.call_tool("fetch_get", json!({"url": format!("http://127.0.0.1:{}/", to_outside.port())})).await.expect("call");
    assert!(is_error(&escaped), "a redirect out of the grant must be refused: {escaped}");
    assert!(escaped.to_string().to_lowercase().contains("denied"), "{escaped}");
    assert!(!escaped.to_string().contains("never be read"));
}

#[tokio::test]
async fn fetch_without_a_grant_reaches_nothing() {
    let server = http_server("unreachable").await;
    let plugins = PluginDir::new().add("fetch", &sample_wasm("fetch"));
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");
    let refused = host.call_tool("fetch_get", json!({"url": format!("http://127.0.0.1:{}/", server.port())})).await.expect("call");
    assert!(is_error(&refused), "{refused}");
    assert!(!refused.to_string().contains("unreachable\""));
}

#[tokio::test]
async fn ungranted_env_var_is_invisible() {
    let plugins = PluginDir::new().add("fixture", &fixture_wasm("fixture")).write("fixture.toml", "env = { GRANTED_VAR = \"granted-value\" }\n");
    // SAFETY-free: the variable is set on the child only, through the harness env below.
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");
    let granted = host.call_tool("fixture_env", json!({"name": "GRANTED_VAR"})).await.expect("call");
    assert!(first_text(&granted).contains("granted-value"), "{granted}");
    // PATH and HOME are set in the host's environment but were never granted.
    for name in ["PATH", "HOME", "PADDOCK_CACHE_DIR"] {
        let hidden = host.call_tool("fixture_env", json!({"name": name})).await.expect("call");
        assert!(!hidden.to_string().contains('/'), "{name} leaked: {hidden}");
    }
}

/// A loopback HTTP server that answers every request with 200 and, as the body, the request
/// head it received: what reached the wire, headers included.
async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let reply = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", head.len());
                let _ = socket.write_all(reply.as_bytes()).await;
                let _ = socket.write_all(&head).await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_secret_reaches_its_target_only_never_a_redirect_and_never_the_log() {
    const TOKEN: &str = "tok-7f3a9c-never-logged";
    let with_secret = echo_server().await;
    let elsewhere = echo_server().await;
    let redirector = redirect_server(format!("http://127.0.0.1:{}/landing", elsewhere.port())).await;
    let token = tempfile::tempdir().expect("token dir");
    std::fs::write(token.path().join("token"), format!("{TOKEN}\n")).expect("write token");
    let token_file = token.path().join("token");
    let grant = format!(
        "network = [\"http://127.0.0.1:{a}\", \"http://127.0.0.1:{b}\", \"http://127.0.0.1:{r}\"]\nsecrets = [\n  {{ target = \"http://127.0.0.1:{a}\", header = \"Authorization\", from_file = {file:?}, prefix = \"Bearer \", allow_http = true }},\n  {{ target = \"http://127.0.0.1:{r}\", header = \"Authorization\", from_file = {file:?}, prefix = \"Bearer \", allow_http = true }},\n]\n",
        a = with_secret.port(),
        b = elsewhere.port(),
        r = redirector.port(),
        file = token_file,
    );
    let plugins = PluginDir::new().add("fetch", &sample_wasm("fetch")).write("fetch.toml", grant);

    let dir = plugins.path().to_str().expect("utf-8");
    let (code, stdout, stderr) = paddock_tests::run_paddock(&["check", dir]).await.expect("run check");
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains(&format!("secret authorization for http://127.0.0.1:{}", with_secret.port())), "{stdout}");
    assert!(!stdout.contains(TOKEN) && !stderr.contains(TOKEN), "{stdout}{stderr}");

    let mut host = StdioHost::start_logging(plugins.path(), &["--log-format", "json"], "debug", std::process::Stdio::piped()).expect("start");
    let mut log = host.take_stderr().expect("stderr");
    let log_text = tokio::spawn(async move {
        let mut text = String::new();
        let _ = log.read_to_string(&mut text).await;
        text
    });
    host.initialize("2025-11-25").await.expect("initialize");
    let direct = host.call_tool("fetch_get", json!({"url": format!("http://127.0.0.1:{}/", with_secret.port())})).await.expect("call");
    assert!(direct.to_string().to_lowercase().contains(&format!("authorization: bearer {TOKEN}")), "{direct}");
    let redirected = host.call_tool("fetch_get", json!({"url": format!("http://127.0.0.1:{}/", redirector.port())})).await.expect("call");
    assert!(redirected.to_string().contains("GET /landing"), "the redirect was followed: {redirected}");
    assert!(!redirected.to_string().to_lowercase().contains("authorization"), "{redirected}");
    host.close_within(paddock_tests::WAIT).await.expect("exit");
    let log_text = tokio::time::timeout(paddock_tests::WAIT, log_text).await.expect("log read in time").expect("log task");
    assert!(log_text.contains("\"plugin\":\"fetch\""), "the log was captured: {log_text}");
    assert!(!log_text.contains(TOKEN), "{log_text}");
}
