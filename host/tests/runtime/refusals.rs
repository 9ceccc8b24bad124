//! Refusals made inside WASI are recorded: a path out of a grant (`..`, a symlink), a write to a
//! read-only grant, raw sockets and name lookups are each refused as before, counted under their
//! kind and logged with the plugin and a target naming what was tried. Their permitted twins
//! record nothing.

use std::io::Write;
use std::sync::{Arc, Mutex};

use paddock::policy::{FsGrant, FsMode, Grant, RefusalKind};
use serde_json::{Value, json};

use super::*;

/// The refusal records logged on this thread while it lives (JSON, one per line).
pub(crate) struct Captured {
    lines: Arc<Mutex<Vec<u8>>>,
    _guard: tracing::subscriber::DefaultGuard,
}

#[derive(Clone)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// Captures records on the current thread; `#[tokio::test]` runs the calls on it.
    pub(crate) fn start() -> Captured {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Sink(lines.clone());
        let subscriber = tracing_subscriber::fmt().json().flatten_event(true).with_max_level(tracing::Level::WARN).with_writer(move || sink.clone()).finish();
        let guard = tracing::subscriber::set_default(subscriber);
        // Another test thread may have registered a callsite while this subscriber was being
        // installed, caching an interest that leaves it out; recompute every callsite's interest
        // now that it is in place.
        tracing::callsite::rebuild_interest_cache();
        Captured { lines, _guard: guard }
    }

    /// Every refusal record so far of `kind`.
    pub(crate) fn refusals(&self, kind: RefusalKind) -> Vec<Value> {
        let text = String::from_utf8(self.lines.lock().expect("log buffer").clone()).expect("utf-8 log");
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .filter(|r| r["message"].as_str().is_some_and(|m| m.starts_with("refused")) && r["kind"] == kind.as_str())
            .collect()
    }

    /// What each refusal of `kind` so far.
    pub(crate) fn attempts(&self, kind: RefusalKind) -> Vec<String> {
        self.refusals(kind).iter().map(|r| r["attempt"].as_str().unwrap_or_default().to_owned()).collect()
    }
}

struct Dirs {
    rw: tempfile::TempDir,
    ro: tempfile::TempDir,
}

/// `rw` granted read-write as `/data`, `ro` read-only as `/ro` (holding `notes.txt`).
fn files_grant() -> (Grant, Dirs) {
    let rw = tempfile::tempdir().expect("rw");
    let ro = tempfile::tempdir().expect("ro");
    std::fs::write(ro.path().join("notes.txt"), "read-only notes").expect("seed");
    let mut grant = Grant::default();
    let host = |d: &tempfile::TempDir| d.path().canonicalize().expect("canonical");
    grant.files.push(FsGrant { host: host(&rw), guest: "/data".into(), mode: FsMode::ReadWrite });
    grant.files.push(FsGrant { host: host(&ro), guest: "/ro".into(), mode: FsMode::ReadOnly });
    (grant, Dirs { rw, ro })
}

#[tokio::test]
async fn a_path_leaving_its_grant_through_dot_dot_is_refused_and_recorded() {
    let log = Captured::start();
    let rt = runtime();
    let (grant, _dirs) = files_grant();
    let plugin = load(&rt, "walker", grant).await;

    // The permitted twins: a file inside the grant, and a missing one, record nothing.
    assert_eq!(ok_text(call(&plugin, "read", json!({"path": "/ro/notes.txt"})).await), "read-only notes");
    error_text(call(&plugin, "read", json!({"path": "/data/missing.txt"})).await);
    assert_eq!(plugin.refusals().count(RefusalKind::File), 0, "{:?}", plugin.refusals().snapshot());

    let out = error_text(call(&plugin, "read", json!({"path": "/data/../../etc/passwd"})).await);
    assert!(!out.contains("root:"), "{out}");
    assert_eq!(plugin.refusals().count(RefusalKind::File), 1, "{:?}", plugin.refusals().snapshot());
    let out = error_text(call(&plugin, "list", json!({"path": "/ro/../data/../.."})).await);
    assert!(!out.contains("etc"), "{out}");
    assert_eq!(plugin.refusals().count(RefusalKind::File), 2);

    let records = log.refusals(RefusalKind::File);
    assert_eq!(records.len(), 2, "{records:#?}");
    assert_eq!(records[0]["plugin"], "walker");
    assert_eq!(records[0]["operation"], "read");
    assert_eq!(records[0]["attempt"], "open-at /data/../../etc/passwd");
    assert_eq!(records[1]["attempt"], "open-at /ro/../data/../..");
}

#[tokio::test]
async fn a_symlink_leading_out_of_its_grant_is_refused_and_recorded() {
    let log = Captured::start();
    let rt = runtime();
    let (grant, dirs) = files_grant();
    std::fs::write(dirs.rw.path().join("inside.txt"), "inside").expect("seed");
    // An absolute symlink planted in the grant by someone else.
    std::os::unix::fs::symlink("/etc", dirs.rw.path().join("planted")).expect("plant");
    let plugin = load(&rt, "linker", grant).await;

    // The permitted twin: a relative symlink that stays inside, made and read by the plugin.
    assert_eq!(ok_text(call(&plugin, "symlink", json!({"target": "inside.txt", "link": "/data/near"})).await), "linked");
    assert_eq!(ok_text(call(&plugin, "read", json!({"path": "/data/near"})).await), "inside");
    assert_eq!(plugin.refusals().count(RefusalKind::File), 0, "{:?}", plugin.refusals().snapshot());

    // A relative link can be made (it is only text), but never followed out of the grant.
    let up = "../".repeat(16);
    assert_eq!(ok_text(call(&plugin, "symlink", json!({"target": up, "link": "/data/escape"})).await), "linked");
    let out = error_text(call(&plugin, "read", json!({"path": "/data/escape/etc/passwd"})).await);
    assert!(!out.contains("root:"), "{out}");
    let out = error_text(call(&plugin, "read", json!({"path": "/data/planted/passwd"})).await);
    assert!(!out.contains("root:"), "{out}");
    // An absolute link is refused when it is made.
    error_text(call(&plugin, "symlink", json!({"target": "/etc", "link": "/data/absolute"})).await);
    assert!(std::fs::symlink_metadata(dirs.rw.path().join("absolute")).is_err(), "the absolute symlink was made");

    assert_eq!(plugin.refusals().count(RefusalKind::File), 3, "{:?}", plugin.refusals().snapshot());
    assert_eq!(log.attempts(RefusalKind::File), ["open-at /data/escape/etc/passwd", "open-at /data/planted/passwd", "symlink-at /data/absolute -> /etc"]);
}

#[tokio::test]
async fn writes_to_a_read_only_grant_are_refused_and_recorded() {
    let log = Captured::start();
    let rt = runtime();
    let (grant, dirs) = files_grant();
    let plugin = load(&rt, "scribbler", grant).await;

    // The permitted twin: writing in the read-write grant.
    assert_eq!(ok_text(call(&plugin, "write", json!({"path": "/data/new.txt", "content": "fresh"})).await), "written");
    assert_eq!(plugin.refusals().count(RefusalKind::File), 0, "{:?}", plugin.refusals().snapshot());

    error_text(call(&plugin, "write", json!({"path": "/ro/evil.txt", "content": "x"})).await);
    assert!(!dirs.ro.path().join("evil.txt").exists(), "the read-only grant was written to");
    // Opened for reading (allowed), then written through.
    error_text(call(&plugin, "write_opened", json!({"path": "/ro/notes.txt"})).await);
    assert_eq!(std::fs::read_to_string(dirs.ro.path().join("notes.txt")).expect("notes"), "read-only notes");

    assert_eq!(plugin.refusals().count(RefusalKind::File), 2, "{:?}", plugin.refusals().snapshot());
    assert_eq!(log.attempts(RefusalKind::File), ["open-at(write) /ro/evil.txt", "write-via-stream /ro/notes.txt"]);
}

#[tokio::test]
async fn raw_sockets_are_refused_and_recorded() {
    let log = Captured::start();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let addr = listener.local_addr().expect("addr");
    let rt = runtime();
    let plugin = load(&rt, "dialer", Grant::default()).await;

    let out = error_text(call(&plugin, "tcp_connect", json!({"addr": addr.to_string()})).await);
    assert!(out.starts_with("connect:"), "{out}");
    assert!(listener.accept().is_err(), "the plugin reached the listener");
    let out = error_text(call(&plugin, "udp_bind", json!({})).await);
    assert!(out.starts_with("bind:"), "{out}");

    assert_eq!(plugin.refusals().count(RefusalKind::Socket), 2, "{:?}", plugin.refusals().snapshot());
    assert_eq!(log.attempts(RefusalKind::Socket), ["tcp ipv4", "udp ipv4"]);
    let records = log.refusals(RefusalKind::Socket);
    assert_eq!(records[0]["plugin"], "dialer");
    assert_eq!(records[0]["operation"], "tcp_connect");
}

#[tokio::test]
async fn name_lookups_are_refused_and_recorded() {
    let log = Captured::start();
    let rt = runtime();
    let plugin = load(&rt, "resolver", Grant::default()).await;

    let out = error_text(call(&plugin, "resolve", json!({"name": "example.com"})).await);
    assert!(out.starts_with("resolve:"), "{out}");
    assert_eq!(plugin.refusals().count(RefusalKind::Dns), 1, "{:?}", plugin.refusals().snapshot());
    // The name is plugin text: it reaches the log escaped.
    error_text(call(&plugin, "resolve", json!({"name": "evil\nWARN forged"})).await);
    assert_eq!(plugin.refusals().count(RefusalKind::Dns), 2);
    assert_eq!(log.attempts(RefusalKind::Dns), ["example.com", "evil\\nWARN forged"]);
    assert_eq!(log.refusals(RefusalKind::Dns)[0]["plugin"], "resolver");
}
