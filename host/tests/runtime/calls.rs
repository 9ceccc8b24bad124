//! Calls: fresh instance per call, deadlines, memory and output limits, traps, host imports,
//! cancellation, and guest stdout kept off the host's stdout.

use std::time::{Duration, Instant};

use paddock::plugin::{CallContext, CallEvent, LogLevel, Plugin, PluginError};
use paddock::policy::{Grant, Limits};
use paddock::protocol::{CacheHint, CacheScope, CompletionRequest, CompletionTarget, ContentBlock};
use serde_json::json;

use super::*;

fn limits(f: impl FnOnce(&mut Limits)) -> Grant {
    let mut grant = Grant::default();
    f(&mut grant.limits);
    grant
}

#[tokio::test]
async fn each_call_runs_in_a_fresh_instance() {
    // Both ways a pooled slot is reset: the dirty pages found by `PAGEMAP_SCAN` (where the
    // kernel has it), and `madvise`. Calls that dirty far more than the resident part are
    // interleaved, so both the kept and the decommitted part of a slot are reused.
    for keep_resident in [true, false] {
        let cache = repo_root().join("target/paddock-test-cache");
        let options = RuntimeOptions { cache_dir: Some(cache), max_instances: 4, keep_resident, ..RuntimeOptions::default() };
        let rt = Runtime::new(options).expect("runtime");
        assert!(rt.is_pooling());
        if !keep_resident {
            assert_eq!(rt.slot_reset(), paddock::runtime::SlotReset::Decommit);
        }
        let plugin = load(&rt, "fixture", Grant::default()).await;
        for round in 0..20 {
            assert_eq!(ok_text(call(&plugin, "counter", json!({})).await), "1", "round {round}, keep_resident {keep_resident}");
            assert_eq!(ok_text(call(&plugin, "alloc", json!({"mib": 8})).await), "allocated 8388608 bytes");
        }
        assert_eq!(ok_text(call(&plugin, "echo", json!({"text": "héllo"})).await), "héllo");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spinning_plugin_times_out_while_another_plugin_answers() {
    let rt = runtime();
    let spinner = load(&rt, "spinner", limits(|l| l.timeout = Duration::from_secs(1))).await;
    let other = load(&rt, "other", Grant::default()).await;
    // What an echo takes on this machine now, with nothing else running: the bounds below are
    // stated against it, so a loaded runner widens them instead of failing them.
    let baseline_started = Instant::now();
    assert_eq!(ok_text(call(&other, "echo", json!({"text": "baseline"})).await), "baseline");
    let slack = (baseline_started.elapsed() * 20).max(Duration::from_millis(500));
    let started = Instant::now();
    let spin = tokio::spawn({
        let spinner = spinner.clone();
        async move { call(&spinner, "spin", json!({})).await }
    });
    let echo_started = Instant::now();
    let echoed = ok_text(call(&other, "echo", json!({"text": "still here"})).await);
    let echo_took = echo_started.elapsed();
    assert_eq!(echoed, "still here");
    assert!(!spin.is_finished(), "the spinning call ended before the other plugin answered");
    assert!(echo_took < slack, "the other plugin took {echo_took:?} (bound {slack:?})");
    let spun = tokio::time::timeout(WAIT, spin).await.expect("spin ends").expect("task");
    let took = started.elapsed();
    assert_eq!(spun.expect_err("spin cannot succeed"), PluginError::Timeout { ms: 1000 });
    assert!(took >= Duration::from_millis(950) && took < Duration::from_secs(1) + slack * 2, "timeout fired after {took:?}");
    // The plugin still serves after its timeout.
    assert_eq!(ok_text(call(&spinner, "echo", json!({"text": "again"})).await), "again");
}

#[tokio::test]
async fn allocating_past_the_memory_limit_fails_and_the_next_call_works() {
    let rt = runtime();
    let plugin = load(&rt, "fixture", limits(|l| l.memory = 16 << 20)).await;
    match call(&plugin, "alloc", json!({"mib": 64})).await {
        Ok(result) => assert!(result.is_error && text(&result).contains("allocation failed"), "{}", text(&result)),
        Err(err) => assert_eq!(err, PluginError::Limit { limit: paddock::plugin::Limit::Memory }),
    }
    assert!(ok_text(call(&plugin, "alloc", json!({"mib": 4})).await).starts_with("allocated"));
    assert_eq!(ok_text(call(&plugin, "echo", json!({"text": "fine"})).await), "fine");
}

#[tokio::test]
async fn a_guest_panic_is_a_trap_and_the_plugin_carries_on() {
    let rt = runtime();
    let plugin = load(&rt, "fixture", Grant::default()).await;
    let err = call(&plugin, "panic", json!({})).await.expect_err("panics trap");
    let PluginError::Trap(message) = &err else { panic!("expected a trap, got {err:?}") };
    assert!(!message.contains('\n'), "trap messages are one line: {message}");
    assert_eq!(ok_text(call(&plugin, "echo", json!({"text": "ok"})).await), "ok");
}

#[tokio::test]
async fn output_past_the_limit_is_refused() {
    let rt = runtime();
    let plugin = load(&rt, "fixture", limits(|l| l.output = 64 << 10)).await;
    let err = call(&plugin, "big_output", json!({"bytes": 100_000})).await.expect_err("too big");
    assert_eq!(err, PluginError::Limit { limit: paddock::plugin::Limit::Output });
    assert_eq!(ok_text(call(&plugin, "big_output", json!({"bytes": 1000})).await).len(), 1000);
}

#[tokio::test]
async fn host_log_and_progress_reach_the_call_context() {
    let rt = runtime();
    let plugin = load(&rt, "fixture", Grant::default()).await;
    let (tx, mut rx) = tokio::sync::mpsc::channel(paddock::plugin::EVENT_QUEUE);
    let cx = CallContext::new("7", Some(tx));
    let out = ok_text(call_with(&plugin, "log_progress", json!({}), &cx).await);
    assert_eq!(out, "logged");
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    assert_eq!(
        events,
        vec![
            CallEvent::Log { level: LogLevel::Info, logger: Some("fixture".into()), data: "hello from the guest".into() },
            CallEvent::Progress { progress: 1.0, total: Some(2.0), message: Some("halfway".into()) },
            CallEvent::Progress { progress: 2.0, total: Some(2.0), message: None },
        ]
    );
}

#[tokio::test]
async fn a_cancelled_call_sees_the_flag_or_is_stopped() {
    let rt = runtime();
    let plugin = load(&rt, "fixture", Grant::default()).await;
    let cx = CallContext::detached("c1");
    cx.cancel();
    assert_eq!(ok_text(call_with(&plugin, "cancel_wait", json!({}), &cx).await), "cancelled");
    // A plugin that ignores the flag is stopped shortly after, long before its 30 s deadline.
    let started = Instant::now();
    let err = call_with(&plugin, "spin", json!({}), &cx).await.expect_err("stopped");
    assert_eq!(err, PluginError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
}

#[tokio::test]
async fn resources_prompts_and_completion_are_served() {
    let rt = runtime();
    let plugin = load(&rt, "fixture", Grant::default()).await;
    let catalog = plugin.catalog();
    assert_eq!(catalog.info.name, "fixture");
    assert!(catalog.tools.iter().any(|t| t.name == "echo" && t.input_schema.get().contains("\"text\"")));
    assert_eq!(catalog.resources[0].uri, "fixture://hello");
    assert_eq!(catalog.resource_templates[0].uri_template, "fixture://echo/{text}");
    assert_eq!(catalog.prompts[0].name, "greet");
    let cx = CallContext::detached("r");
    let read = tokio::time::timeout(WAIT, plugin.read_resource("fixture://hello", &cx)).await.expect("in time").expect("read");
    let read = read.into_complete().expect("complete");
    assert_eq!(read.contents[0].text.as_deref(), Some("hello, world"));
    assert_eq!(read.cache, Some(CacheHint { ttl_ms: 1_000, scope: CacheScope::Private }), "the plugin's cache hint comes through");
    let blob = tokio::time::timeout(WAIT, plugin.read_resource("fixture://blob", &cx)).await.expect("in time").expect("read");
    let blob = blob.into_complete().expect("complete");
    assert_eq!(blob.contents[0].blob.as_deref(), Some("AAEC/w=="));
    assert_eq!(blob.cache, None);
    assert_eq!(catalog.cache.resources, Some(CacheHint { ttl_ms: 30_000, scope: CacheScope::Public }));
    assert_eq!(catalog.cache.tools, None);
    let missing = tokio::time::timeout(WAIT, plugin.read_resource("fixture://nope", &cx)).await.expect("in time");
    assert!(matches!(missing, Err(PluginError::NotFound(_))), "{missing:?}");
    let args = vec![("who".to_owned(), "Ada".to_owned())];
    let prompt = tokio::time::timeout(WAIT, plugin.get_prompt("greet", &args, &cx)).await.expect("in time").expect("prompt");
    let prompt = prompt.into_complete().expect("complete");
    assert!(matches!(&prompt.messages[0].content, ContentBlock::Text { text, .. } if text == "Hello, Ada!"));
    let request =
        CompletionRequest { target: CompletionTarget::Prompt("greet".into()), argument_name: "who".into(), argument_value: "b".into(), context: vec![] };
    let done = tokio::time::timeout(WAIT, plugin.complete(&request, &cx)).await.expect("in time").expect("complete");
    assert_eq!(done.values, vec!["bob".to_owned()]);
}

/// Runs inside a child process (see `guest_output_never_reaches_stdout`): the guest prints to
/// its stdout and stderr while the test's stdout is watched by the parent.
#[tokio::test]
async fn child_guest_prints() {
    if std::env::var_os("PADDOCK_TEST_CHILD").is_none() {
        return;
    }
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter("plugin=info").init();
    let rt = runtime();
    let plugin = load(&rt, "fixture", Grant::default()).await;
    assert_eq!(ok_text(call(&plugin, "print", json!({"lines": 3000})).await), "printed");
}

#[tokio::test]
async fn guest_output_never_reaches_stdout() {
    let exe = std::env::current_exe().expect("test binary");
    let child = tokio::process::Command::new(exe)
        .args(["--exact", "calls::child_guest_prints", "--nocapture", "--test-threads=1"])
        .env("PADDOCK_TEST_CHILD", "1")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(WAIT, child).await.expect("child in time").expect("child ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "the child test did not run:\n{stdout}");
    assert!(!stdout.contains("FIXTURE-STD"), "guest output reached stdout:\n{stdout}");
    assert!(stderr.contains("FIXTURE-STDOUT line 0") && stderr.contains("FIXTURE-STDERR line 0"), "guest output is not in the log:\n{stderr}");
    // 3000 lines of each stream is far more than the per-call budget: the rest was dropped.
    assert!(!stderr.contains("FIXTURE-STDOUT line 2999"), "guest output is not bounded");
}
