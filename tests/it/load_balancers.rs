//! Three replicas sharing a key, a plugins folder and a real `redis-server`, behind real load
//! balancers started with the recipes of `host/deploy/`: nginx round robin (every legacy request
//! may land on another replica than its session's, so the forward hop is used), nginx routing by
//! the owner in the session id, and HAProxy learning each session from its response header. The
//! official conformance suite (both requirement sets, tasks included), the Python SDK client in
//! both eras and over HTTP+SSE, the TypeScript SDK and rmcp run against the balancer's URL. The
//! recipes themselves are checked offline: `nginx -t`, `haproxy -c`, `envoy --mode validate` and
//! a Kubernetes schema check of the manifests.

use std::ffi::OsStr;

use paddock_tests::balancers::Balancer;
use paddock_tests::redis::RedisServer;
use paddock_tests::replicas::Cluster;
use paddock_tests::{WAIT, conformance_plugins, installed_client, paddock_bin, repo_root, run_client_script};
use rmcp::ServiceExt;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use serde_json::Value;

use crate::clients_rmcp::{AnswersForms, exercise_conformance};
use crate::conformance_suite::{SCENARIOS_2025_11_25, SCENARIOS_2026_07_28, run_suite_at};

/// How a balancer is started in front of the cluster.
#[derive(Debug, Clone, Copy)]
enum Kind {
    NginxRoundRobin,
    NginxByReplica,
    Haproxy,
}

async fn balance(kind: Kind, cluster: &Cluster) -> Option<Balancer> {
    let started = match kind {
        Kind::NginxRoundRobin => Balancer::nginx("nginx-round-robin.conf", cluster.ports()).await,
        Kind::NginxByReplica => Balancer::nginx("nginx-by-replica.conf", cluster.ports()).await,
        Kind::Haproxy => Balancer::haproxy("haproxy.cfg", cluster.ports()).await,
    };
    started.expect("the load balancer starts")
}

/// The whole client matrix against the cluster behind `kind`.
async fn everything_behind(kind: Kind) {
    let Some(redis) = RedisServer::start().await.expect("redis") else { return };
    let plugins = conformance_plugins();
    let url = redis.url();
    let cluster = Cluster::start(plugins.path(), 3, &["--store", &url, "--trusted-proxy", "127.0.0.1/32"]).await.expect("three replicas");
    let Some(balancer) = balance(kind, &cluster).await else { return };
    let mcp = balancer.url("/mcp");
    let base = balancer.url("");

    run_suite_at(&mcp, "2025-11-25", SCENARIOS_2025_11_25).await;
    run_suite_at(&mcp, "2026-07-28", SCENARIOS_2026_07_28).await;

    let logs = || cluster.logs();
    if let Some(python) = installed_client("PADDOCK_TEST_PYTHON", "the Python client (mcp 2.3.0)") {
        for (mode, transport, version) in [("legacy", "http", "2025-11-25"), ("2026-07-28", "http", "2026-07-28"), ("legacy", "sse", "2024-11-05")] {
            let args = [OsStr::new(&base), OsStr::new(mode), OsStr::new(transport)];
            let summary = run_client_script(&python, "py/e2e_http.py", &args, logs).await;
            assert_eq!(summary["text"], "This is a simple text response for testing.", "{kind:?} {mode} {transport}: {summary}");
            if transport == "http" {
                assert_eq!(summary["protocol_version"], version, "{kind:?} {mode}: {summary}");
            }
            assert!(summary["answered"].is_string(), "an input request answered: {summary}");
        }
    }
    if let Some(node) = installed_client("PADDOCK_TEST_NODE", "Node 22 with the TypeScript SDK") {
        let args = [OsStr::new(&base), OsStr::new("http")];
        let summary: Value = run_client_script(&node, "ts/e2e_http.mjs", &args, logs).await;
        assert_eq!(summary["text"], "This is a simple text response for testing.", "{kind:?}: {summary}");
        assert!(summary["answered"].as_str().is_some_and(|a| a.starts_with("User response: action=accept")), "{summary}");
    }
    // rmcp, in a legacy session and in 2026-07-28.
    let legacy = tokio::time::timeout(WAIT, AnswersForms::default().serve(rmcp::transport::StreamableHttpClientTransport::from_uri(mcp.clone())))
        .await
        .expect("in time")
        .expect("initialize through the balancer");
    assert_eq!(legacy.peer_info().expect("server info").protocol_version, ProtocolVersion::V_2025_11_25);
    tokio::time::timeout(WAIT, exercise_conformance(&legacy)).await.expect("in time");
    legacy.cancel().await.expect("close");
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let modern =
        tokio::time::timeout(WAIT, AnswersForms::default().serve_with_lifecycle(rmcp::transport::StreamableHttpClientTransport::from_uri(mcp), lifecycle))
            .await
            .expect("in time")
            .expect("discover through the balancer");
    tokio::time::timeout(WAIT, exercise_conformance(&modern)).await.expect("in time");
    modern.cancel().await.expect("close");

    let forwarded = cluster.logs().matches("forwarded to the replica that owns its session").count();
    eprintln!("{kind:?}: requests forwarded to their session's owner: {forwarded}");
    match kind {
        // Without stickiness, two legacy requests in three land elsewhere and are forwarded.
        Kind::NginxRoundRobin => assert!(forwarded > 10, "{forwarded} forwarded"),
        // Every request naming a session reaches its owner directly.
        Kind::NginxByReplica => assert_eq!(forwarded, 0, "{}", cluster.logs()),
        // The table learns Streamable HTTP sessions; an HTTP+SSE session's first message may
        // still be forwarded (its id is in a stream event, which the table cannot learn).
        Kind::Haproxy => {}
    }
    assert!(!cluster.logs().contains("panicked"), "{}", cluster.logs());
}

#[tokio::test]
async fn everything_passes_behind_nginx_round_robin() {
    everything_behind(Kind::NginxRoundRobin).await;
}

#[tokio::test]
async fn everything_passes_behind_nginx_routing_by_the_owner_in_the_session_id() {
    everything_behind(Kind::NginxByReplica).await;
}

#[tokio::test]
async fn everything_passes_behind_haproxy_learning_sessions_from_their_response_header() {
    everything_behind(Kind::Haproxy).await;
}

/// The deploy tools venv (`scripts/test` installs Envoy and kubernetes-validate into it).
fn deploy_tool(name: &str) -> Option<std::path::PathBuf> {
    let venv = installed_client("PADDOCK_TEST_DEPLOY_VENV", "Envoy and kubernetes-validate (tests/clients/deploy)")?;
    Some(std::path::Path::new(&venv).join("bin").join(name))
}

async fn checked(program: &std::path::Path, args: &[&str]) -> String {
    let out = tokio::time::timeout(WAIT, tokio::process::Command::new(program).args(args).output()).await.expect("in time").expect("runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} {args:?} refused the recipe:\n{said}", program.display());
    said
}

#[tokio::test]
async fn every_recipe_passes_its_own_tools_offline_check_and_names_only_flags_paddock_has() {
    let deploy = repo_root().join("host/deploy");
    let ports = [8081, 8082, 8083];
    let dir = tempfile::tempdir().expect("dir");
    if let Some(nginx) = paddock_tests::installed_tool("nginx", "nginx").or_else(|| Some("/usr/sbin/nginx".into())) {
        std::fs::create_dir_all(dir.path().join("logs")).expect("logs");
        for recipe in ["nginx-round-robin.conf", "nginx-by-replica.conf"] {
            let path = dir.path().join(recipe);
            std::fs::write(&path, paddock_tests::balancers::render(recipe, &ports, 8080).expect("render")).expect("write");
            let prefix = dir.path().display().to_string();
            checked(&nginx, &["-t", "-p", &prefix, "-c", &path.display().to_string(), "-g", "error_log stderr;"]).await;
        }
    }
    if let Some(haproxy) = paddock_tests::installed_tool("haproxy", "haproxy").or_else(|| Some("/usr/sbin/haproxy".into())) {
        // As shipped: replicas that do not resolve yet are started disabled, not refused.
        checked(&haproxy, &["-c", "-f", &deploy.join("haproxy.cfg").display().to_string()]).await;
    }
    if let Some(envoy) = deploy_tool("envoy") {
        let said = checked(&envoy, &["--mode", "validate", "-c", &deploy.join("envoy.yaml").display().to_string()]).await;
        assert!(said.contains("OK"), "{said}");
    }
    let manifests = deploy.join("kubernetes/paddock.yaml");
    if let Some(validate) = deploy_tool("kubernetes-validate") {
        checked(&validate, &["--strict", &manifests.display().to_string()]).await;
    }
    // Every flag the StatefulSet passes is one `paddock serve` has.
    let help = tokio::process::Command::new(paddock_bin()).args(["serve", "--help"]).output().await.expect("help");
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let text = std::fs::read_to_string(&manifests).expect("manifests");
    let flags: Vec<&str> = text.lines().filter_map(|l| l.trim().strip_prefix("- --")).map(|f| f.split('=').next().unwrap_or_default()).collect();
    assert!(flags.len() >= 8, "{flags:?}");
    for flag in flags {
        assert!(help.contains(&format!("--{flag}")), "the manifests pass --{flag}, which `paddock serve` does not have");
    }
}
