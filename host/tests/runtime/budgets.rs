//! Every host call is bounded per call: log records and bytes, progress, change notices and
//! guest stdout/stderr records. The excess is dropped and counted against the plugin, and the
//! call itself still completes.

use paddock::plugin::{CallEvent, EVENT_QUEUE, ListKind};
use paddock::policy::{Grant, RefusalKind};
use serde_json::json;

use super::*;

/// Runs `tool` with a listening context and returns the events the session would have seen.
async fn events_of(plugin: &WasmPlugin, tool: &str, args: serde_json::Value) -> (String, Vec<CallEvent>) {
    let (tx, mut rx) = tokio::sync::mpsc::channel(EVENT_QUEUE);
    let cx = CallContext::new("budget", Some(tx));
    // Drain concurrently, as the session does.
    let drain = tokio::spawn(async move {
        let mut events = Vec::new();
        while let Some(event) = rx.recv().await {
            events.push(event);
        }
        events
    });
    let out = ok_text(call_with(plugin, tool, args, &cx).await);
    drop(cx);
    (out, tokio::time::timeout(WAIT, drain).await.expect("drained").expect("task"))
}

#[tokio::test]
async fn a_log_flood_is_cut_to_the_call_budget_and_counted() {
    let rt = runtime();
    let plugin = load(&rt, "fixture", Grant::default()).await;
    let (out, events) = events_of(&plugin, "log_flood", json!({"count": 20_000, "bytes": 16_384})).await;
    assert_eq!(out, "logged");
    let bytes: usize = events
        .iter()
        .map(|e| match e {
            CallEvent::Log { data, .. } => data.len(),
            _ => 0,
        })
        .sum();
    assert!(events.len() <= 1000, "{} log events passed", events.len());
    assert!(bytes <= 1 << 20, "{bytes} bytes of logs passed");
    assert!(plugin.refusals().count(RefusalKind::Log) >= 19_000, "{:?}", plugin.refusals().snapshot());
    // Its permitted twin: a few small records all arrive.
    let (_, events) = events_of(&plugin, "log_flood", json!({"count": 5, "bytes": 10})).await;
    assert_eq!(events.len(), 5);
}

#[tokio::test]
async fn progress_and_notice_floods_are_cut_and_counted() {
    let rt = runtime();
    let plugin = load(&rt, "fixture", Grant::default()).await;
    let (_, events) = events_of(&plugin, "progress_flood", json!({"count": 300_000})).await;
    assert!(events.len() <= 1000, "{} progress events passed", events.len());
    assert!(plugin.refusals().count(RefusalKind::Progress) >= 299_000);
    let (out, events) = events_of(&plugin, "notice_flood", json!({"count": 100_000})).await;
    assert_eq!(out, "announced");
    let notices = events.iter().filter(|e| matches!(e, CallEvent::ListChanged { .. } | CallEvent::ResourceUpdated { .. })).count();
    assert_eq!(notices, 64, "64 change notices reach the session, the rest are refused");
    assert!(plugin.refusals().count(RefusalKind::Notices) >= 199_000, "{:?}", plugin.refusals().snapshot());
    let (_, events) = events_of(&plugin, "progress_flood", json!({"count": 3})).await;
    assert_eq!(events.len(), 3, "a few progress reports all arrive");
}

#[tokio::test]
async fn change_notices_name_the_plugin_and_its_lists_can_be_read_again() {
    let rt = runtime();
    let plugin = load(&rt, "fixture", Grant::default()).await;
    let (out, events) = events_of(&plugin, "notice_flood", json!({"count": 1})).await;
    assert_eq!(out, "announced");
    assert_eq!(
        events,
        [
            CallEvent::ListChanged { plugin: "fixture".into(), kind: ListKind::Tools },
            CallEvent::ResourceUpdated { plugin: "fixture".into(), uri: "fixture://r/0".into() },
        ],
        "the plugin is named by the host, whatever the guest says"
    );
    let again = tokio::time::timeout(WAIT, plugin.reload_catalog()).await.expect("in time").expect("the lists read again");
    let names = |tools: &[paddock::protocol::Tool]| tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&again.tools), names(&plugin.catalog().tools), "a fresh instance declares the same lists");
    assert_eq!(again.resources.len(), plugin.catalog().resources.len());
}

#[tokio::test]
async fn guest_newlines_count_as_records() {
    let rt = runtime();
    let plugin = load(&rt, "fixture", Grant::default()).await;
    assert_eq!(ok_text(call(&plugin, "newlines", json!({"count": 65_536})).await), "written");
    let dropped = plugin.refusals().count(RefusalKind::GuestOutput);
    assert!(dropped >= 65_000, "only {dropped} newline records were dropped");
    let quiet = load(&rt, "quiet", Grant::default()).await;
    assert_eq!(ok_text(call(&quiet, "newlines", json!({"count": 10})).await), "written");
    assert_eq!(quiet.refusals().count(RefusalKind::GuestOutput), 0, "ten records are within the budget");
}

#[tokio::test]
async fn memory_and_output_refusals_are_counted() {
    let rt = runtime();
    let mut grant = Grant::default();
    grant.limits.memory = 16 << 20;
    grant.limits.output = 4096;
    let plugin = load(&rt, "fixture", grant).await;
    let _ = call(&plugin, "alloc", json!({"mib": 64})).await;
    assert!(plugin.refusals().count(RefusalKind::Memory) >= 1, "{:?}", plugin.refusals().snapshot());
    let err = call(&plugin, "big_output", json!({"bytes": 10_000})).await.expect_err("over the output limit");
    assert_eq!(err, PluginError::Limit { limit: paddock::plugin::Limit::Output });
    assert_eq!(plugin.refusals().count(RefusalKind::Output), 1);
}

#[tokio::test]
async fn http_header_memory_and_resource_entries_are_bounded_per_call() {
    let rt = runtime();
    let plugin = load(&rt, "fixture", Grant::default()).await;
    // 10,000 header sets held at once once took over a gigabyte of host memory for one call:
    // the entry cap stops it.
    let err = call(&plugin, "fields_bomb", json!({"count": 10_000, "bytes": 1024})).await.expect_err("stopped");
    assert_eq!(err, PluginError::Limit { limit: paddock::plugin::Limit::Resources });
    assert_eq!(plugin.refusals().count(RefusalKind::Resources), 1);
    // One header set past its byte cap (128 KiB was wasi:http's default) is stopped too.
    let err = call(&plugin, "fields_bomb", json!({"count": 1, "bytes": 65_536})).await.expect_err("stopped");
    assert_eq!(err, PluginError::Limit { limit: paddock::plugin::Limit::Resources });
    assert_eq!(plugin.refusals().count(RefusalKind::Resources), 2);
    // The permitted twin: small headers in ordinary numbers are fine, and the plugin still works.
    assert_eq!(ok_text(call(&plugin, "fields_bomb", json!({"count": 100, "bytes": 16_384})).await), "kept 100 fields, 0 values refused");
}
