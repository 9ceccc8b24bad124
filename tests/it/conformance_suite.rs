//! The official conformance suite (`@modelcontextprotocol/conformance` 0.2.0-alpha.12, on
//! Node 22) against `paddock serve --http` with the conformance plugin, for both requirement
//! sets. Every scenario it runs must pass, scored or not, and no check may fail or warn.

use std::collections::BTreeMap;
use std::process::Stdio;

use paddock_tests::http::HttpHost;
use paddock_tests::{WAIT, conformance_plugins, installed_client, repo_root};
use serde_json::Value;

/// Checks that may report WARNING (each with its reason in the README): none.
const ALLOWED_WARNINGS: &[&str] = &[];

async fn run_suite(requirements: &str, scenarios: usize) {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await.expect("paddock serves over HTTP");
    // The suite's DNS-rebinding scenario needs a localhost URL.
    let url = format!("http://localhost:{}/mcp", host.addr.port());
    run_suite_at(&url, requirements, scenarios).await;
}

/// Runs the suite for `requirements` against the server at `url` (a localhost URL): every one
/// of its `scenarios` must run and pass.
pub(crate) async fn run_suite_at(url: &str, requirements: &str, scenarios: usize) {
    let Some(node) = installed_client("PADDOCK_TEST_NODE", "Node 22 with the conformance suite") else { return };
    let suite = repo_root().join("tests/clients/ts/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(suite.exists(), "{} is missing: run scripts/test", suite.display());
    let results = tempfile::tempdir().expect("results folder");
    let child = tokio::process::Command::new(node)
        .arg(&suite)
        .args(["server", "--url", url, "--requirements", requirements, "-o"])
        .arg(results.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the conformance suite");
    let out = tokio::time::timeout(WAIT * 5, child.wait_with_output()).await.expect("the suite finished in time").expect("the suite ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = stdout.lines().filter(|l| l.starts_with('✓') || l.starts_with('✗') || l.starts_with("Total")).collect::<Vec<_>>().join("\n");
    assert!(out.status.success(), "the suite failed for {requirements}:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));

    let mut totals: BTreeMap<String, usize> = BTreeMap::new();
    let mut runs = 0;
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(results.path()).expect("results") {
        let dir = entry.expect("entry").path();
        let Ok(text) = std::fs::read_to_string(dir.join("checks.json")) else { continue };
        runs += 1;
        let scenario = scenario_name(dir.file_name().and_then(|n| n.to_str()).unwrap_or_default());
        let checks: Vec<Value> = serde_json::from_str(&text).expect("checks.json");
        for check in checks {
            let status = check["status"].as_str().unwrap_or_default().to_owned();
            let id = format!("{scenario}/{}", check["id"].as_str().unwrap_or_default());
            let allowed = status == "WARNING" && ALLOWED_WARNINGS.contains(&id.as_str());
            if (status == "FAILURE" || status == "WARNING") && !allowed {
                problems.push(format!("{id}: {status}: {}", check["errorMessage"].as_str().or(check["message"].as_str()).unwrap_or_default()));
            }
            *totals.entry(status).or_default() += 1;
        }
    }
    eprintln!("conformance {requirements}: {runs} scenarios, checks {totals:?}\n{report}");
    assert!(problems.is_empty(), "{requirements}: {problems:#?}\n{report}");
    assert_eq!(runs, scenarios, "every scenario of {requirements} ran:\n{report}");
    assert!(totals.get("SUCCESS").copied().unwrap_or(0) > scenarios, "{totals:?}");
}

/// `server-<scenario>-<timestamp>` → `<scenario>` (the timestamp is `-YYYY-MM-DDT…`).
fn scenario_name(folder: &str) -> String {
    let name = folder.trim_start_matches("server-");
    let bytes = name.as_bytes();
    let stamp = (0..bytes.len()).find(|&i| {
        bytes.len() > i + 11
            && bytes[i] == b'-'
            && bytes[i + 1..i + 5].iter().all(u8::is_ascii_digit)
            && bytes[i + 5] == b'-'
            && bytes[i + 8] == b'-'
            && bytes[i + 11] == b'T'
    });
    name[..stamp.unwrap_or(name.len())].to_owned()
}

#[test]
fn scenario_folders_are_named_by_their_scenario() {
    assert_eq!(scenario_name("server-tools-list-2026-11-23T08-20-45-018Z"), "tools-list");
    assert_eq!(scenario_name("server-input-required-result-ignore-extra-params-2026-01-02T20-20-20-000Z"), "input-required-result-ignore-extra-params");
}

#[tokio::test]
async fn the_2025_11_25_requirements_pass_in_full() {
    run_suite("2025-11-25", SCENARIOS_2025_11_25).await;
}

#[tokio::test]
async fn the_2026_07_28_requirements_pass_in_full() {
    run_suite("2026-07-28", SCENARIOS_2026_07_28).await;
}

/// Scenarios the suite runs for each requirement set.
pub(crate) const SCENARIOS_2025_11_25: usize = 33;
pub(crate) const SCENARIOS_2026_07_28: usize = 50;
