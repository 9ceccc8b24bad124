//! Loading: the compiled-component cache, bad files reported while good ones load, grant files
//! with several mistakes, and `inspect`.

use std::time::Instant;

use paddock::config::Config;
use paddock::policy::Grant;
use paddock::runtime::{CacheOutcome, RuntimeOptions, inspect, instances_for_folder, load_folder};
use serde_json::json;

use super::*;

#[tokio::test]
async fn a_second_load_hits_the_cache_and_a_corrupt_entry_is_recompiled() {
    let cache = tempfile::tempdir().expect("cache dir");
    let dir = cache.path().join("nested");
    let rt = Runtime::new(RuntimeOptions { cache_dir: Some(dir.clone()), max_instances: 16, ..RuntimeOptions::default() }).expect("runtime");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&dir).expect("created").permissions().mode() & 0o777, 0o700);
    }
    let wasm = fixture_wasm("fixture");
    let artifact = rt.cache_path_for(&std::fs::read(&wasm).expect("wasm")).expect("cache in use");
    assert!(!artifact.exists());

    let started = Instant::now();
    let (_, first) = rt.load_plugin("fixture", &wasm, Grant::default()).await.expect("load");
    let cold = started.elapsed();
    assert_eq!(first, CacheOutcome::Compiled);
    assert!(artifact.exists(), "{} was not written", artifact.display());

    let started = Instant::now();
    let (plugin, second) = rt.load_plugin("fixture", &wasm, Grant::default()).await.expect("load");
    let warm = started.elapsed();
    assert_eq!(second, CacheOutcome::Hit);
    assert!(warm < cold, "cached load took {warm:?}, compiling took {cold:?}");
    assert_eq!(ok_text(call(&plugin, "echo", json!({"text": "cached"})).await), "cached");

    // Replace the artifact with a new file, as a crash or another tool would leave it.
    std::fs::remove_file(&artifact).expect("remove");
    std::fs::write(&artifact, b"definitely not a compiled component").expect("corrupt");
    let (plugin, third) = rt.load_plugin("fixture", &wasm, Grant::default()).await.expect("load");
    assert_eq!(third, CacheOutcome::Recompiled);
    assert_eq!(ok_text(call(&plugin, "echo", json!({"text": "recompiled"})).await), "recompiled");
    let (_, fourth) = rt.load_plugin("fixture", &wasm, Grant::default()).await.expect("load");
    assert_eq!(fourth, CacheOutcome::Hit);
}

#[tokio::test]
async fn files_with_the_same_content_are_compiled_once() {
    let dir = tempfile::tempdir().expect("dir");
    let p = dir.path();
    let mut config_text = String::new();
    for id in ["a", "b", "c", "d"] {
        std::fs::copy(fixture_wasm("fixture"), p.join(format!("{id}.wasm"))).expect("copy");
        config_text.push_str(&format!("[plugins.{id}]\nexpose = {{ prefix = \"{id}\" }}\n"));
    }
    std::fs::copy(fixture_wasm("other_world"), p.join("other.wasm")).expect("copy");
    std::fs::write(p.join("paddock.toml"), config_text).expect("config");
    let cache = tempfile::tempdir().expect("cache");
    let rt = Runtime::new(RuntimeOptions { cache_dir: Some(cache.path().to_path_buf()), max_instances: 16, ..RuntimeOptions::default() }).expect("runtime");
    let report = tokio::time::timeout(WAIT, load_folder(&rt, p, &Config::load(p, None))).await.expect("in time");
    let ids: Vec<&str> = report.plugins.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c", "d"], "{:?}", report.problems);
    assert_eq!(report.problems.len(), 1, "the other world is refused after compiling: {:?}", report.problems);
    assert_eq!(report.components, 2, "four copies of one file and one other file are two components");
    assert_eq!(
        std::fs::read_dir(cache.path()).expect("cache").filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "cwasm"))).count(),
        2
    );
    for loaded in &report.plugins {
        assert_eq!(ok_text(call(&loaded.plugin, "echo", json!({"text": loaded.id})).await), loaded.id, "each copy is its own plugin");
    }
}

#[tokio::test]
async fn bad_files_are_reported_while_good_plugins_load() {
    let dir = tempfile::tempdir().expect("dir");
    let p = dir.path();
    std::fs::copy(fixture_wasm("fixture"), p.join("good.wasm")).expect("copy");
    std::fs::copy(fixture_wasm("fixture"), p.join("granted.wasm")).expect("copy");
    std::fs::copy(fixture_wasm("other_world"), p.join("otherworld.wasm")).expect("copy");
    std::fs::copy(fixture_wasm("fixture"), p.join("bad name.wasm")).expect("copy");
    let noise: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(p.join("broken.wasm"), noise).expect("write");
    std::fs::write(p.join("truncated.wasm"), &std::fs::read(fixture_wasm("fixture")).expect("read")[..1000]).expect("write");
    std::fs::write(p.join("core.wasm"), b"\0asm\x01\0\0\0").expect("write");
    std::fs::write(
        p.join("granted.toml"),
        "files = [{ host = \"/definitely/not/here\", guest = \"data\", mode = \"rx\" }]\nnetwork = [\"ftp://\"]\nbogus = 1\n",
    )
    .expect("write");
    let config = Config::load(p, None);
    let rt = runtime();
    let report = tokio::time::timeout(WAIT, load_folder(&rt, p, &config)).await.expect("in time");

    let ids: Vec<&str> = report.plugins.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["good"], "{:?}", report.problems);
    let problem = |file: &str| {
        report
            .problems
            .iter()
            .find(|pr| pr.path.file_name().is_some_and(|n| n == file))
            .unwrap_or_else(|| panic!("{file} not reported: {:?}", report.problems))
            .reason
            .clone()
    };
    assert!(problem("broken.wasm").contains("not a WebAssembly file"), "{}", problem("broken.wasm"));
    assert!(problem("core.wasm").contains("core module"), "{}", problem("core.wasm"));
    let other = problem("otherworld.wasm");
    assert!(other.contains("another world") && other.contains("paddock:plugin/tools@0.2.0"), "{other}");
    assert!(problem("truncated.wasm").contains("does not compile"), "{}", problem("truncated.wasm"));
    assert!(problem("bad name.wasm").contains("not a valid plugin id"));
    let grant = problem("granted.toml");
    for key in ["files[0].host", "files[0].guest", "files[0].mode", "network", "bogus"] {
        assert!(grant.contains(key), "`{key}` missing from: {grant}");
    }
    assert_eq!(report.problems.len(), 6, "{:?}", report.problems);
    // The good plugin serves.
    let good = &report.plugins[0].plugin;
    assert_eq!(ok_text(call(good, "echo", json!({"text": "served"})).await), "served");
}

#[tokio::test]
async fn a_grant_over_the_host_memory_cap_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(fixture_wasm("fixture"), dir.path().join("big.wasm")).expect("copy");
    std::fs::write(dir.path().join("big.toml"), "limits = { memory = \"1GiB\" }\n").expect("write");
    let config = Config::load(dir.path(), None);
    assert!(config.problems().is_empty(), "{:?}", config.problems());
    assert_eq!(config.largest_memory_limit(), 1 << 30);
    let report = load_folder(&runtime(), dir.path(), &config).await;
    assert!(report.plugins.is_empty());
    assert!(report.problems[0].reason.contains("memory limit"), "{:?}", report.problems);
}

#[tokio::test]
async fn inspect_shows_exports_and_requests() {
    let rt = runtime();
    let seen = tokio::time::timeout(WAIT, inspect(&rt, &fixture_wasm("fixture"))).await.expect("in time").expect("inspect");
    assert_eq!(seen.catalog.tools.len(), 30);
    assert_eq!(seen.catalog.info.requests.network, vec!["http://127.0.0.1:*".to_owned()]);
    assert_eq!(seen.catalog.info.requests.env, vec!["GRANTED_VAR".to_owned()]);
    assert!(seen.exports.iter().any(|e| e == "paddock:plugin/tools@0.2.0"), "{:?}", seen.exports);
    assert!(seen.imports.iter().any(|i| i == "paddock:plugin/host@0.2.0"), "{:?}", seen.imports);
    let wrong = inspect(&rt, &fixture_wasm("other_world")).await.expect_err("other world");
    assert!(wrong.to_string().contains("other_world.wasm") && wrong.reason.contains("another world"), "{wrong}");
}

#[tokio::test]
async fn pooling_is_used_and_on_demand_allocation_works_too() {
    assert!(runtime().is_pooling(), "the pooling allocator could not be set up with the default sizes");
    let rt = Runtime::new(RuntimeOptions { pooling: false, no_cache: true, ..RuntimeOptions::default() }).expect("runtime");
    assert!(!rt.is_pooling());
    assert!(rt.cache_dir().is_none());
    let plugin = load(&rt, "fixture", Grant::default()).await;
    assert_eq!(ok_text(call(&plugin, "echo", json!({"text": "on demand"})).await), "on demand");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_is_sized_to_the_folders_concurrency_and_every_plugin_reaches_its_own() {
    let folder = tempfile::tempdir().expect("folder");
    let p = folder.path();
    assert_eq!(instances_for_folder(p, &Config::load(p, None)), 1, "an empty folder");
    for id in ["a", "b"] {
        std::fs::copy(fixture_wasm("fixture"), p.join(format!("{id}.wasm"))).expect("copy");
    }
    std::fs::write(
        p.join("paddock.toml"),
        "[plugins.a]\nlimits = { concurrency = 2, timeout = \"1s\" }\n[plugins.b]\nlimits = { concurrency = 3, timeout = \"1s\" }\n",
    )
    .expect("config");
    let config = Config::load(p, None);
    // Each plugin's concurrency, plus one instance each for reading its catalog at load.
    let instances = instances_for_folder(p, &config);
    assert_eq!(instances, 2 + 1 + 3 + 1);
    let cache = repo_root().join("target/paddock-test-cache");
    let rt = Runtime::new(RuntimeOptions { cache_dir: Some(cache), max_instances: instances, ..RuntimeOptions::default() }).expect("runtime");
    let report = tokio::time::timeout(WAIT, load_folder(&rt, p, &config)).await.expect("in time");
    assert_eq!(report.plugins.len(), 2, "{:?}", report.problems);

    // Every plugin runs as many calls at once as it is granted: each is instantiated and runs
    // until its deadline, none is refused for want of a slot in the pool.
    let spins = report.plugins.iter().flat_map(|loaded| {
        let calls = loaded.grant.limits.concurrency;
        (0..calls).map(move |_| {
            let plugin = loaded.plugin.clone();
            async move { call(&plugin, "spin", json!({})).await }
        })
    });
    let outcomes = futures::future::join_all(spins).await;
    assert_eq!(outcomes.len(), 5);
    for outcome in outcomes {
        assert_eq!(outcome.expect_err("spin cannot succeed"), paddock::plugin::PluginError::Timeout { ms: 1000 });
    }

    // A plugin without a grant counts the default concurrency; the total is capped.
    std::fs::write(p.join("paddock.toml"), "[plugins.a]\nlimits = { concurrency = 1000 }\n").expect("config");
    assert_eq!(instances_for_folder(p, &Config::load(p, None)), paddock::runtime::MAX_INSTANCES);
    std::fs::remove_file(p.join("paddock.toml")).expect("remove");
    let default = paddock::policy::Limits::DEFAULT_CONCURRENCY;
    assert_eq!(instances_for_folder(p, &Config::load(p, None)), 2 * (default + 1));
}
