//! The output limit counts the bytes a result takes on the wire, and the host-call data cap
//! follows the limit: empty items cannot smuggle a large reply past it, a result too large to
//! lift is the output limit (never a crash), and the largest result the config allows arrives.

use paddock::policy::{Grant, Limits, RefusalKind};
use paddock::protocol::CallToolResult;
use paddock::runtime::{Runtime, RuntimeOptions};
use serde_json::json;

use super::refusals::Captured;
use super::*;

/// The bytes a tool result takes in a message, as the session writes it.
fn wire_len(result: &CallToolResult) -> u64 {
    serde_json::to_value(result).expect("serializes").to_string().len() as u64
}

/// Bytes one empty text block adds to a result: `{"type":"text","text":""},`.
const EMPTY_BLOCK: u64 = 26;

#[tokio::test]
async fn empty_blocks_count_against_the_output_limit() {
    let log = Captured::start();
    let rt = runtime();
    let plugin = load(&rt, "blocks", Grant::default()).await;
    let limit = Limits::DEFAULT_OUTPUT;

    // The permitted twin: a thousand empty blocks are 26 KB.
    let small = call(&plugin, "empty_blocks", json!({"count": 1000})).await.expect("within the limit");
    assert_eq!(small.content.len(), 1000);
    assert!(wire_len(&small) <= limit);
    assert_eq!(plugin.refusals().count(RefusalKind::Output), 0);

    // 50,000 empty blocks are 1.3 MB on the wire: over 1 MiB, though their text is empty.
    let err = call(&plugin, "empty_blocks", json!({"count": 50_000})).await.expect_err("over the limit");
    assert_eq!(err, PluginError::Limit { limit: paddock::plugin::Limit::Output });
    assert_eq!(plugin.refusals().count(RefusalKind::Output), 1);

    // 150,000 are too many even to lift out of the guest under the call's host-call data cap
    // (each takes 224 bytes of host memory once lifted): still the output limit, recorded, not
    // a crash.
    let err = call(&plugin, "empty_blocks", json!({"count": 150_000})).await.expect_err("over the limit");
    assert_eq!(err, PluginError::Limit { limit: paddock::plugin::Limit::Output });
    assert_eq!(plugin.refusals().count(RefusalKind::Output), 2, "{:?}", plugin.refusals().snapshot());
    // The first was refused by its size, the second while it was being lifted: wasmtime's
    // hostcall-fuel error is recognized.
    assert_eq!(log.attempts(RefusalKind::Output), ["result size", "result too large to lift"]);

    // And the plugin still answers.
    assert_eq!(ok_text(call(&plugin, "echo", json!({"text": "after"})).await), "after");
}

#[tokio::test]
async fn host_call_data_over_the_cap_is_a_resource_limit() {
    let log = Captured::start();
    let rt = runtime();
    let plugin = load(&rt, "talker", Grant::default()).await;
    // One 20 MiB log message is more than a host call may carry (16 MiB at the default output
    // limit): it is the plugin's resource limit, not its output.
    let err = call(&plugin, "log_flood", json!({"count": 1, "bytes": 20 << 20})).await.expect_err("over the cap");
    assert_eq!(err, PluginError::Limit { limit: paddock::plugin::Limit::Resources });
    assert_eq!(plugin.refusals().count(RefusalKind::Resources), 1, "{:?}", plugin.refusals().snapshot());
    assert_eq!(plugin.refusals().count(RefusalKind::Output), 0);
    assert_eq!(log.attempts(RefusalKind::Resources), ["host-call data"]);
    // The permitted twin: a message under the cap is taken (and cut to the log budget).
    assert_eq!(ok_text(call(&plugin, "log_flood", json!({"count": 1, "bytes": 1 << 20})).await), "logged");
}

#[tokio::test]
async fn a_result_just_under_the_largest_output_limit_is_delivered() {
    let memory = 512 << 20;
    let cache = repo_root().join("target/paddock-test-cache");
    let options = RuntimeOptions { cache_dir: Some(cache), max_instances: 4, max_memory: memory, ..RuntimeOptions::default() };
    let rt = Runtime::new(options).expect("runtime");
    let mut grant = Grant::default();
    grant.limits.output = Limits::MAX_OUTPUT;
    grant.limits.memory = memory;
    let plugin = load(&rt, "largest", grant).await;

    // The most empty blocks that fit: lifting them takes nine times their JSON in host memory,
    // far past the 16 MiB a host call may carry at the default limit.
    let count = (Limits::MAX_OUTPUT - 64) / EMPTY_BLOCK;
    let result = call(&plugin, "empty_blocks", json!({"count": count})).await.expect("within the largest limit");
    assert_eq!(result.content.len() as u64, count);
    let sent = wire_len(&result);
    assert!(sent <= Limits::MAX_OUTPUT && sent > Limits::MAX_OUTPUT - 1024, "{sent} bytes");

    // One string just under the limit.
    let bytes = Limits::MAX_OUTPUT - 64;
    let result = call(&plugin, "big_output", json!({"bytes": bytes})).await.expect("within the largest limit");
    let sent = wire_len(&result);
    assert!(sent <= Limits::MAX_OUTPUT && sent > Limits::MAX_OUTPUT - 1024, "{sent} bytes");

    // Just over is refused as output.
    let err = call(&plugin, "empty_blocks", json!({"count": count + 100})).await.expect_err("over the limit");
    assert_eq!(err, PluginError::Limit { limit: paddock::plugin::Limit::Output });
    assert_eq!(plugin.refusals().count(RefusalKind::Output), 1);
}
