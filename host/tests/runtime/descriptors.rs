//! Descriptor budgets with a real component: one plugin's calls cannot hold the descriptors
//! another plugin needs, however many plugins spend their whole budgets, and what a call held
//! comes back when it ends.

use paddock::policy::{FsGrant, FsMode, Grant, RefusalKind};
use paddock::runtime::{Runtime, RuntimeOptions};
use serde_json::json;

use super::*;

fn writable(dir: &tempfile::TempDir, descriptors: u64) -> Grant {
    let mut grant = Grant::default();
    grant.files.push(FsGrant { host: dir.path().canonicalize().expect("dir"), guest: "/data".into(), mode: FsMode::ReadWrite });
    grant.limits.descriptors = descriptors;
    grant.limits.concurrency = 4;
    grant
}

/// Opened count from `open_many`'s answer, `opened N [first error]`.
fn opened(answer: &str) -> u64 {
    answer.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("unexpected answer: {answer}"))
}

#[tokio::test]
async fn one_plugin_cannot_spend_the_descriptors_another_plugin_needs() {
    let cache = repo_root().join("target/paddock-test-cache");
    let rt =
        Runtime::new(RuntimeOptions { cache_dir: Some(cache), max_instances: 64, max_descriptors: Some(300), ..RuntimeOptions::default() }).expect("runtime");
    assert_eq!(rt.descriptor_budget(), 300);
    let (greedy_dir, modest_dir) = (tempfile::tempdir().expect("dir"), tempfile::tempdir().expect("dir"));
    let greedy = load(&rt, "greedy", writable(&greedy_dir, 200)).await;
    let modest = load(&rt, "modest", writable(&modest_dir, 64)).await;

    // Three calls of one plugin each try to hold 150 files for a while.
    let hogs: Vec<_> = (0..3)
        .map(|_| {
            let greedy = greedy.clone();
            tokio::spawn(async move { ok_text(call(&greedy, "open_many", json!({"path": "/data", "count": 150, "hold_ms": 3000})).await) })
        })
        .collect();
    let filled = async {
        while greedy.refusals().count(RefusalKind::Resources) == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(WAIT, filled).await.expect("the greedy plugin reaches its budget");
    assert!(greedy.descriptors_in_use() <= 200, "{}", greedy.descriptors_in_use());

    // Meanwhile another plugin opens what it needs.
    let answer = ok_text(call(&modest, "open_many", json!({"path": "/data", "count": 20, "hold_ms": 0})).await);
    assert_eq!(answer.trim(), "opened 20", "{answer}");
    assert_eq!(modest.refusals().count(RefusalKind::Resources), 0);

    let mut total = 0;
    for hog in hogs {
        let answer = tokio::time::timeout(WAIT, hog).await.expect("in time").expect("task");
        total += opened(&answer);
    }
    assert!(total <= 200, "the greedy plugin held {total} files at once");
    assert_eq!(greedy.descriptors_in_use(), 0, "every call gave its descriptors back");
    let again = ok_text(call(&greedy, "open_many", json!({"path": "/data", "count": 150, "hold_ms": 0})).await);
    assert_eq!(again.trim(), "opened 150", "{again}");
}

#[tokio::test]
async fn plugins_spending_their_whole_budgets_never_take_what_another_plugin_was_reserved() {
    let cache = repo_root().join("target/paddock-test-cache");
    let rt =
        Runtime::new(RuntimeOptions { cache_dir: Some(cache), max_instances: 64, max_descriptors: Some(300), ..RuntimeOptions::default() }).expect("runtime");
    let dirs: Vec<tempfile::TempDir> = (0..5).map(|_| tempfile::tempdir().expect("dir")).collect();
    // Loaded first, the modest plugin's 64 are its own; the greedy ones ask 300 between them.
    let modest = load(&rt, "modest", writable(&dirs[0], 64)).await;
    let mut greedy = Vec::new();
    for (n, dir) in dirs[1..4].iter().enumerate() {
        greedy.push(load(&rt, &format!("greedy{n}"), writable(dir, 100)).await);
    }
    let budgets: Vec<u64> = greedy.iter().map(|g| g.grant().limits.descriptors).collect();
    assert_eq!(budgets, [100, 100, 36], "the last is cut to what was left");
    let refused = rt.load_plugin("late", &fixture_wasm("fixture"), writable(&dirs[4], 100)).await.map(|_| ()).unwrap_err().to_string();
    assert!(refused.contains("descriptor budget (100) does not fit") && refused.contains("0 of the host's 300") && refused.contains("fix:"), "{refused}");

    // Every greedy plugin spends all it was given: 100, 100, and the 36 that were left.
    let hogs: Vec<_> = greedy
        .iter()
        .map(|plugin| {
            let plugin = plugin.clone();
            tokio::spawn(async move { ok_text(call(&plugin, "open_many", json!({"path": "/data", "count": 150, "hold_ms": 3000})).await) })
        })
        .collect();
    let filled = async {
        while greedy.iter().any(|g| g.refusals().count(RefusalKind::Resources) == 0) {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(WAIT, filled).await.expect("each greedy plugin reaches its budget");
    let held: Vec<u64> = greedy.iter().map(|g| g.descriptors_in_use()).collect();
    for (held, reserved) in held.iter().zip([100, 100, 36]) {
        assert!((reserved - 4..=reserved).contains(held), "a greedy plugin holds {held} of its {reserved}: {held:?}");
    }

    // Meanwhile the modest plugin opens what it needs, up to its own budget.
    let answer = ok_text(call(&modest, "open_many", json!({"path": "/data", "count": 50, "hold_ms": 0})).await);
    assert_eq!(answer.trim(), "opened 50", "{answer}");
    assert_eq!(modest.refusals().count(RefusalKind::Resources), 0);
    for hog in hogs {
        tokio::time::timeout(WAIT, hog).await.expect("in time").expect("task");
    }

    // A plugin dropped gives its reservation back.
    drop(greedy.remove(0));
    let late = load(&rt, "late", writable(&dirs[4], 100)).await;
    let answer = ok_text(call(&late, "open_many", json!({"path": "/data", "count": 90, "hold_ms": 0})).await);
    assert_eq!(answer.trim(), "opened 90", "{answer}");
}
