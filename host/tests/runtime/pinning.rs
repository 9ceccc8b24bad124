//! File grants pinned at load: what a granted path points at after load never changes what a
//! plugin reaches, and grants that would let one plugin reshape another grant, or grant itself
//! more, are refused at load with both grants named.

use paddock::config::Config;
use paddock::policy::{FsGrant, FsMode, Grant, RefusalKind};
use paddock::runtime::load_folder;
use serde_json::json;

use super::*;

fn ro(host: &std::path::Path, guest: &str) -> FsGrant {
    FsGrant { host: host.canonicalize().expect("canonical"), guest: guest.into(), mode: FsMode::ReadOnly }
}

#[tokio::test]
async fn a_granted_directory_replaced_by_a_symlink_after_load_is_still_the_one_granted() {
    let base = tempfile::tempdir().expect("base");
    let granted = base.path().join("pub");
    std::fs::create_dir(&granted).expect("granted dir");
    std::fs::write(granted.join("inside.txt"), "granted content").expect("seed");
    let secret = base.path().join("secret");
    std::fs::create_dir(&secret).expect("secret dir");
    std::fs::write(secret.join("key.txt"), "must stay hidden").expect("seed");

    let rt = runtime();
    let mut grant = Grant::default();
    grant.files.push(ro(&granted, "/pub"));
    let plugin = load(&rt, "fixture", grant).await;
    assert_eq!(ok_text(call(&plugin, "list", json!({"path": "/pub"})).await), "inside.txt");

    // What a writable neighbour could do: move the granted directory away and leave a symlink
    // (here to a secret directory; a relative `../../..` reaches the host's root the same way).
    std::fs::rename(&granted, base.path().join("moved")).expect("move away");
    std::os::unix::fs::symlink(&secret, &granted).expect("symlink in its place");

    let listed = ok_text(call(&plugin, "list", json!({"path": "/pub"})).await);
    assert_eq!(listed, "inside.txt", "the grant followed the path instead of the pinned directory");
    let read = call(&plugin, "read", json!({"path": "/pub/key.txt"})).await.expect("a result");
    assert!(read.is_error && !text(&read).contains("must stay hidden"), "{}", text(&read));
    // Its permitted twin: the file that was granted is still readable.
    assert_eq!(ok_text(call(&plugin, "read", json!({"path": "/pub/inside.txt"})).await), "granted content");
}

/// A plugins folder with two copies of the fixture, `a` and `b`, and this `paddock.toml`.
fn folder(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("plugins dir");
    for id in ["a", "b"] {
        std::fs::copy(fixture_wasm("fixture"), dir.path().join(format!("{id}.wasm"))).expect("copy");
    }
    std::fs::write(dir.path().join("paddock.toml"), config).expect("config");
    dir
}

async fn load_dir(dir: &std::path::Path) -> paddock::runtime::LoadReport {
    let config = Config::load(dir, None);
    assert!(!config.has_errors(), "{:?}", config.problems());
    tokio::time::timeout(WAIT, load_folder(&runtime(), dir, &config)).await.expect("in time")
}

fn loaded(report: &paddock::runtime::LoadReport) -> Vec<&str> {
    report.plugins.iter().map(|p| p.id.as_str()).collect()
}

#[tokio::test]
async fn a_read_write_grant_around_another_plugin_s_grant_refuses_both_and_names_both() {
    let data = tempfile::tempdir().expect("data");
    std::fs::create_dir(data.path().join("pub")).expect("pub");
    let ws = data.path().display();
    let config = format!(
        "[plugins.a]\nfiles = [{{ host = \"{ws}\", guest = \"/data\", mode = \"rw\" }}]\n[plugins.b]\nfiles = [{{ host = \"{ws}/pub\", guest = \"/pub\", mode = \"ro\" }}]\n"
    );
    let dir = folder(&config);
    let report = load_dir(dir.path()).await;
    assert!(loaded(&report).is_empty(), "{:?}", loaded(&report));
    assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
    for problem in &report.problems {
        assert!(problem.reason.contains("`a`") && problem.reason.contains("`b`"), "{problem}");
        assert!(problem.reason.contains("/pub") && problem.reason.contains("fix:"), "{problem}");
    }

    // The permitted twin: the same directories side by side, not nested, both load.
    std::fs::create_dir(data.path().join("other")).expect("other");
    let config = format!(
        "[plugins.a]\nfiles = [{{ host = \"{ws}/other\", guest = \"/data\", mode = \"rw\" }}]\n[plugins.b]\nfiles = [{{ host = \"{ws}/pub\", guest = \"/pub\", mode = \"ro\" }}]\n"
    );
    let dir = folder(&config);
    assert_eq!(loaded(&load_dir(dir.path()).await), ["a", "b"]);
}

#[tokio::test]
async fn a_read_write_grant_over_the_plugins_folder_is_refused() {
    let dir = folder("");
    std::fs::write(dir.path().join("paddock.toml"), "[plugins.a]\nfiles = [{ host = \".\", guest = \"/self\", mode = \"rw\" }]\n[plugins.b]\nfiles = [{ host = \".\", guest = \"/self\", mode = \"ro\" }]\n").expect("config");
    let report = load_dir(dir.path()).await;
    let problem = report.problems.iter().find(|p| p.reason.contains("plugin `a`")).expect("a refused");
    assert!(problem.reason.contains("plugins folder") || problem.reason.contains("config file"), "{problem}");
    // `b` overlaps `a` (same directory, one of them read-write), so it is refused too; alone,
    // a read-only view of the folder loads.
    let ro_only = folder("[plugins.b]\nfiles = [{ host = \".\", guest = \"/self\", mode = \"ro\" }]\n");
    assert_eq!(loaded(&load_dir(ro_only.path()).await), ["a", "b"]);
}

#[tokio::test]
async fn a_grant_over_the_compiled_plugin_cache_is_refused_even_read_only() {
    let cache = repo_root().join("target/paddock-test-cache");
    std::fs::create_dir_all(&cache).expect("cache");
    let dir = folder(&format!("[plugins.b]\nfiles = [{{ host = \"{}\", guest = \"/cache\", mode = \"ro\" }}]\n", cache.display()));
    let report = load_dir(dir.path()).await;
    assert_eq!(loaded(&report), ["a"]);
    assert!(report.problems[0].reason.contains("compiled-plugin cache"), "{:?}", report.problems);
}

#[tokio::test]
async fn writes_to_a_read_only_grant_fail_and_the_plugin_keeps_running() {
    let dir = tempfile::tempdir().expect("dir");
    let rt = runtime();
    let mut grant = Grant::default();
    grant.files.push(ro(dir.path(), "/ro"));
    let plugin = load(&rt, "fixture", grant).await;
    error_text(call(&plugin, "write", json!({"path": "/ro/x.txt", "content": "x"})).await);
    assert!(!dir.path().join("x.txt").exists());
    assert_eq!(plugin.refusals().count(RefusalKind::Memory), 0);
    assert_eq!(ok_text(call(&plugin, "echo", json!({"text": "alive"})).await), "alive");
}
