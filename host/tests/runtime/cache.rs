//! The compiled-component cache runs only what it compiled: artifacts are bound to their wasm
//! and engine by a keyed MAC, and a cache folder, key or artifact that another user could have
//! written (or, for the key, read), or that is a symbolic link, is never trusted.

use std::os::unix::fs::{MetadataExt, PermissionsExt, chown, symlink};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use paddock::plugin::Plugin;
use paddock::policy::Grant;
use paddock::runtime::{CacheOutcome, Runtime, RuntimeOptions, WasmPlugin};
use serde_json::json;

use super::*;

/// The uid files are handed to when a test needs another user's file: `nobody` on most systems.
const OTHER_UID: u32 = 65534;

/// The `text` sample plugin, a second real component besides the fixture.
fn text_wasm() -> PathBuf {
    let path = repo_root().join("sample-plugins/target/wasm32-wasip2/release/text.wasm");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build --release --target wasm32-wasip2 --manifest-path sample-plugins/Cargo.toml` (or scripts/build-plugins)",
        path.display()
    );
    path
}

/// A runtime whose cache is `dir`; it reports no cache dir when the folder is refused.
fn runtime_at(dir: &Path) -> Runtime {
    Runtime::new(RuntimeOptions { cache_dir: Some(dir.to_path_buf()), pooling: false, max_instances: 8, ..RuntimeOptions::default() }).expect("runtime")
}

async fn load_from(rt: &Runtime, id: &str, wasm: &Path) -> (WasmPlugin, CacheOutcome) {
    tokio::time::timeout(WAIT, rt.load_plugin(id, wasm, Grant::default()))
        .await
        .expect("load in time")
        .unwrap_or_else(|e| panic!("{} does not load: {e}", wasm.display()))
}

fn artifact_for(rt: &Runtime, wasm: &Path) -> PathBuf {
    rt.cache_path_for(&std::fs::read(wasm).expect("read wasm")).expect("cache in use")
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).expect("stat").permissions().mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn tool_names(plugin: &WasmPlugin) -> Vec<String> {
    plugin.catalog().tools.iter().map(|t| t.name.clone()).collect()
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Every name in `dir` with its size and modification time.
fn snapshot(dir: &Path) -> Vec<(PathBuf, u64, SystemTime)> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| {
            let e = e.expect("entry");
            let meta = std::fs::symlink_metadata(e.path()).expect("stat");
            (e.path(), meta.len(), meta.modified().expect("mtime"))
        })
        .collect();
    entries.sort();
    entries
}

#[tokio::test]
async fn an_artifact_copied_over_another_plugins_is_recompiled_and_its_own_tools_served() {
    let tmp = tempfile::tempdir().expect("tmp");
    let rt = runtime_at(&tmp.path().join("cache"));
    let (fixture, text) = (fixture_wasm("fixture"), text_wasm());
    assert_eq!(load_from(&rt, "fixture", &fixture).await.1, CacheOutcome::Compiled);
    assert_eq!(load_from(&rt, "text", &text).await.1, CacheOutcome::Compiled);
    let (fixture_artifact, text_artifact) = (artifact_for(&rt, &fixture), artifact_for(&rt, &text));

    // A valid artifact of this user's, for this engine, but compiled from other wasm.
    std::fs::copy(&fixture_artifact, &text_artifact).expect("copy over");
    let (plugin, outcome) = load_from(&rt, "text", &text).await;
    assert_eq!(outcome, CacheOutcome::Recompiled);
    let tools = tool_names(&plugin);
    assert!(tools.iter().any(|t| t == "upper") && !tools.iter().any(|t| t == "counter"), "{tools:?}");
    assert_eq!(ok_text(call(&plugin, "upper", json!({"text": "own code"})).await), "OWN CODE");

    // The artifact stored in its place is the text plugin's own.
    let (plugin, outcome) = load_from(&rt, "text", &text).await;
    assert_eq!(outcome, CacheOutcome::Hit);
    assert_eq!(tool_names(&plugin), tools);
    assert_ne!(std::fs::read(&text_artifact).expect("read"), std::fs::read(&fixture_artifact).expect("read"));
}

#[tokio::test]
async fn a_tampered_artifact_is_recompiled_and_the_fresh_one_hits() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("cache");
    let rt = runtime_at(&dir);
    let fixture = fixture_wasm("fixture");
    assert_eq!(load_from(&rt, "fixture", &fixture).await.1, CacheOutcome::Compiled);
    let artifact = artifact_for(&rt, &fixture);
    assert_eq!((mode(&dir), mode(&dir.join("key")), mode(&artifact)), (0o700, 0o600, 0o600));

    // One bit flipped in the middle of the compiled code, well past the header.
    let mut bytes = std::fs::read(&artifact).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&artifact, &bytes).expect("tamper");
    let (plugin, outcome) = load_from(&rt, "fixture", &fixture).await;
    assert_eq!(outcome, CacheOutcome::Recompiled);
    assert_eq!(ok_text(call(&plugin, "echo", json!({"text": "recompiled"})).await), "recompiled");
    assert_ne!(std::fs::read(&artifact).expect("read"), bytes, "the tampered artifact was not replaced");
    assert_eq!(load_from(&rt, "fixture", &fixture).await.1, CacheOutcome::Hit);
}

#[tokio::test]
async fn an_artifact_that_is_a_symlink_is_not_followed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let rt = runtime_at(&tmp.path().join("cache"));
    let fixture = fixture_wasm("fixture");
    assert_eq!(load_from(&rt, "fixture", &fixture).await.1, CacheOutcome::Compiled);
    let artifact = artifact_for(&rt, &fixture);

    // The link points at this very plugin's valid artifact: following it would be a hit.
    let elsewhere = tmp.path().join("elsewhere.cwasm");
    std::fs::copy(&artifact, &elsewhere).expect("copy");
    std::fs::remove_file(&artifact).expect("remove");
    symlink(&elsewhere, &artifact).expect("symlink");
    let target = std::fs::read(&elsewhere).expect("read");

    let (plugin, outcome) = load_from(&rt, "fixture", &fixture).await;
    assert_eq!(outcome, CacheOutcome::Recompiled);
    assert_eq!(ok_text(call(&plugin, "echo", json!({"text": "own"})).await), "own");
    let meta = std::fs::symlink_metadata(&artifact).expect("stat");
    assert!(meta.file_type().is_file(), "the link was not replaced by a file of the cache's own");
    assert_eq!(std::fs::read(&elsewhere).expect("read"), target, "the link's target was written");
    assert_eq!(load_from(&rt, "fixture", &fixture).await.1, CacheOutcome::Hit);
}

#[tokio::test]
async fn a_cache_folder_that_is_a_symlink_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    let real = tmp.path().join("real");
    let fixture = fixture_wasm("fixture");
    // A complete, valid cache (key and artifact) behind the link.
    assert_eq!(load_from(&runtime_at(&real), "fixture", &fixture).await.1, CacheOutcome::Compiled);
    let before = snapshot(&real);
    let link = tmp.path().join("link");
    symlink(&real, &link).expect("symlink");

    let rt = runtime_at(&link);
    assert_eq!(rt.cache_dir(), None);
    assert_eq!(rt.cache_path_for(b"anything"), None);
    let (plugin, outcome) = load_from(&rt, "fixture", &fixture).await;
    assert_eq!(outcome, CacheOutcome::Uncached, "an artifact was read through the link");
    assert_eq!(ok_text(call(&plugin, "echo", json!({"text": "uncached"})).await), "uncached");
    assert_eq!(snapshot(&real), before, "something was written through the link");
}

#[tokio::test]
async fn a_folder_writable_by_others_is_refused_and_left_as_it_is() {
    let tmp = tempfile::tempdir().expect("tmp");
    for shared in [0o770, 0o707, 0o777, 0o1777] {
        let dir = tmp.path().join(format!("shared-{shared:o}"));
        std::fs::create_dir(&dir).expect("mkdir");
        set_mode(&dir, shared);
        let rt = runtime_at(&dir);
        assert_eq!(rt.cache_dir(), None, "mode {shared:o} was accepted");
        assert_eq!(mode(&dir), shared, "the folder's mode was changed");
        assert!(snapshot(&dir).is_empty(), "something was written into a refused folder");
        if shared == 0o777 {
            assert_eq!(load_from(&rt, "fixture", &fixture_wasm("fixture")).await.1, CacheOutcome::Uncached);
            assert!(snapshot(&dir).is_empty(), "an artifact was stored in a refused folder");
        }
    }
    // Readable by others is fine: the key inside stays private.
    let readable = tmp.path().join("readable");
    std::fs::create_dir(&readable).expect("mkdir");
    set_mode(&readable, 0o755);
    assert_eq!(runtime_at(&readable).cache_dir(), Some(readable.as_path()));
    assert_eq!(mode(&readable.join("key")), 0o600);
}

#[tokio::test]
async fn a_folder_owned_by_another_user_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = if is_root() {
        let dir = tmp.path().join("foreign");
        std::fs::create_dir(&dir).expect("mkdir");
        set_mode(&dir, 0o700);
        chown(&dir, Some(OTHER_UID), Some(OTHER_UID)).expect("chown");
        dir
    } else {
        // Without root the test cannot give a folder away; `/` belongs to root.
        PathBuf::from("/")
    };
    let owner = std::fs::metadata(&dir).expect("stat").uid();
    assert_ne!(owner, rustix::process::geteuid().as_raw());
    let before = snapshot(&dir);
    let rt = runtime_at(&dir);
    assert_eq!(rt.cache_dir(), None);
    assert_eq!(std::fs::metadata(&dir).expect("stat").uid(), owner, "the folder was taken over");
    assert_eq!(snapshot(&dir), before, "something was written into another user's folder");
}

#[tokio::test]
async fn a_key_others_could_read_or_that_another_user_owns_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("cache");
    assert!(runtime_at(&dir).cache_dir().is_some());
    let key = dir.join("key");
    let original = std::fs::read(&key).expect("key");
    assert_eq!(original.len(), 32);
    assert_eq!(mode(&key), 0o600);

    for exposed in [0o640, 0o604, 0o620, 0o602, 0o644] {
        set_mode(&key, exposed);
        assert_eq!(runtime_at(&dir).cache_dir(), None, "key mode {exposed:o} was accepted");
        assert_eq!(mode(&key), exposed, "the key's mode was changed");
        assert_eq!(std::fs::read(&key).expect("key"), original, "the key was replaced");
    }
    // The same key, private again, is used as it is.
    set_mode(&key, 0o600);
    assert_eq!(runtime_at(&dir).cache_dir(), Some(dir.as_path()));
    assert_eq!(std::fs::read(&key).expect("key"), original);

    if is_root() {
        chown(&key, Some(OTHER_UID), Some(OTHER_UID)).expect("chown");
        assert_eq!(runtime_at(&dir).cache_dir(), None, "another user's key was accepted");
        assert_eq!(std::fs::metadata(&key).expect("stat").uid(), OTHER_UID);
        std::fs::remove_file(&key).expect("remove");
    } else {
        std::fs::remove_file(&key).expect("remove");
    }

    // A key that is a link to a private copy is not followed.
    let copy = tmp.path().join("key-copy");
    std::fs::write(&copy, &original).expect("write");
    set_mode(&copy, 0o600);
    symlink(&copy, &key).expect("symlink");
    assert_eq!(runtime_at(&dir).cache_dir(), None, "a symlinked key was accepted");
    assert!(std::fs::symlink_metadata(&key).expect("stat").file_type().is_symlink());
}

#[tokio::test]
async fn an_artifact_writable_by_others_or_owned_by_another_user_is_not_loaded() {
    let tmp = tempfile::tempdir().expect("tmp");
    let rt = runtime_at(&tmp.path().join("cache"));
    let fixture = fixture_wasm("fixture");
    assert_eq!(load_from(&rt, "fixture", &fixture).await.1, CacheOutcome::Compiled);
    let artifact = artifact_for(&rt, &fixture);

    // Its MAC is still valid: only the mode makes it untrusted.
    set_mode(&artifact, 0o622);
    assert_eq!(load_from(&rt, "fixture", &fixture).await.1, CacheOutcome::Recompiled);
    assert_eq!(mode(&artifact), 0o600);

    if is_root() {
        chown(&artifact, Some(OTHER_UID), Some(OTHER_UID)).expect("chown");
        assert_eq!(load_from(&rt, "fixture", &fixture).await.1, CacheOutcome::Recompiled);
        assert_eq!(std::fs::metadata(&artifact).expect("stat").uid(), rustix::process::geteuid().as_raw());
    }
    assert_eq!(load_from(&rt, "fixture", &fixture).await.1, CacheOutcome::Hit);
}
