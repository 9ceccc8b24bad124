//! Callers past their policy: one token holder floods calls over its rate limit and approval
//! forms it never answers. The host answers each at once (429, or the sealed form, which holds
//! nothing on the server), logs the limit once for the burst, holds no more memory or
//! descriptors than before, and serves another principal meanwhile.

use anyhow::{Result, ensure};
use paddock_tests::http::{HttpHost, modern_meta};
use paddock_tests::{PluginDir, fixture_wasm};
use serde_json::json;

use crate::harness::{ATTACKER, Baseline, MIB, ONE_AT_A_TIME, bystander_is_served_with, exchange_head, modern_post_named};

const MALLORY: &str = "mallory-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef01";

fn digest(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_flood_over_the_rate_limit_and_unanswered_approvals_hold_nothing_and_another_principal_is_served() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let policy = r#"
[plugins.conformance]
expose = { prefix = "" }

[[access.rule]]
name = "ask first"
who = ["*"]
tools = ["test_simple_text"]
approval = "ask"

[rates]
tools = { test_error_handling = { rate = "1/hour", burst = 1 } }
"#;
    let tokens = format!("[[token]]\nname = \"mallory\"\nsha256 = \"{}\"\n\n[[token]]\nname = \"bob\"\nsha256 = \"{}\"\n", digest(MALLORY), digest(BOB));
    let plugins = PluginDir::new().add("conformance", &fixture_wasm("conformance")).write("paddock.toml", policy).write("tokens.txt", tokens);
    let tokens_file = plugins.path().join("tokens.txt");
    let host = HttpHost::start(plugins.path(), &["--tokens", tokens_file.to_str().unwrap_or_default()]).await?;
    let call = |tool: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}, "_meta": modern_meta(json!({"elicitation": {}}))}});
        modern_post_named("tools/call", tool, &body).replacen("Host: localhost\r\n", &format!("Host: localhost\r\nAuthorization: Bearer {MALLORY}\r\n"), 1)
    };
    // Warm: one of each, so the baseline holds what serving them needs.
    let (first, _, _) = exchange_head(ATTACKER, host.addr, &call("test_error_handling")).await?;
    ensure!(first == 200, "the first call is within the limit: {first}");
    let (form, _, body) = exchange_head(ATTACKER, host.addr, &call("test_simple_text")).await?;
    ensure!(form == 200 && body.contains("paddock.approval"), "an approval form: {form} {body}");
    let baseline = Baseline::of(host.pid())?;

    let (limited_request, asked_request) = (call("test_error_handling"), call("test_simple_text"));
    for n in 0..1000 {
        let (status, head, _) = exchange_head(ATTACKER, host.addr, &limited_request).await?;
        ensure!(status == 429 && head.to_ascii_lowercase().contains("retry-after:"), "call {n}: {status} {head}");
        let (status, _, body) = exchange_head(ATTACKER, host.addr, &asked_request).await?;
        ensure!(status == 200 && body.contains("input_required"), "form {n}: {status} {body}");
        if n == 500 {
            bystander_is_served_with(&host, "while a caller floods past its limits", Some(BOB)).await?;
        }
    }
    baseline.within("1000 refused calls and 1000 unanswered approval forms", 16 * MIB, 4)?;
    bystander_is_served_with(&host, "after the flood", Some(BOB)).await?;
    host.wait_for_log("rate limit reached").await?;
    let lines = host.log_text().matches("rate limit reached").count();
    ensure!(lines == 1, "the burst is logged once, not {lines} times");
    Ok(())
}
