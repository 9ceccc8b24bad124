//! Tasks in both designs: the 2026-07-28 extension (server-decided, polled, answered through
//! `tasks/update`, followed on a listen request) and the 2025-11-25 experimental tasks
//! (client-requested, `tasks/result` waits, the session asks for input), with their refusals.

use super::*;
use crate::session::{META_RELATED_TASK, META_SUBSCRIPTION_ID, SERVER_BUSY};

const TASK_CAPS: &str = r#"{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}"#;

/// A 2026-07-28 request whose client declares `caps`.
fn request(id: u32, method: &str, caps: &str, params: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{caps}}},{params}}}}}"#
    )
}

fn call(id: u32, caps: &str, tool: &str, arguments: &str) -> String {
    request(id, "tools/call", caps, &format!(r#""name":"{tool}","arguments":{arguments}"#))
}

fn task_request(id: u32, method: &str, task: &Value) -> String {
    request(id, method, TASK_CAPS, &format!(r#""taskId":{task}"#))
}

impl Harness {
    /// Sends `line` and returns the reply with its id, passing over notifications.
    async fn reply_to(&mut self, line: &str) -> Value {
        let id: Value = serde_json::from_str::<Value>(line).expect("a request")["id"].clone();
        self.send(line).await;
        loop {
            let frame = self.recv().await;
            if frame["id"] == id {
                return frame;
            }
            assert!(frame.get("method").is_some(), "an unexpected reply while waiting for {id}: {frame}");
        }
    }

    /// Polls `tasks/get` until the task leaves `working`/`input_required` as `until` says.
    async fn poll_until(&mut self, task: &Value, until: &str) -> Value {
        for id in 1000.. {
            let got = self.ask(&task_request(id, "tasks/get", task)).await["result"].clone();
            if got["status"] == until {
                return got;
            }
            assert!(id < 1500, "the task never reached {until}: {got}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        unreachable!()
    }
}

#[tokio::test(start_paused = true)]
async fn a_slow_call_becomes_a_task_that_a_listen_request_follows_to_its_result() {
    let mut h = Harness::new();
    let created = h.ask(&call(1, TASK_CAPS, "fake_background", r#"{"ms":600}"#)).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    assert!(created["taskId"].as_str().and_then(|id| id.split_once('.')).is_some_and(|(_, sealed)| sealed.len() == 43), "an owner-tagged id: {created}");
    assert!(created["ttlMs"].as_u64().is_some_and(|t| t > 0) && created["pollIntervalMs"].as_u64().is_some(), "{created}");
    assert!(created["createdAt"].is_string() && created["lastUpdatedAt"].is_string());
    for absent in ["task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval", "content"] {
        assert!(created.get(absent).is_none(), "`{absent}` in {created}");
    }
    let task = created["taskId"].clone();
    let got = h.ask(&task_request(2, "tasks/get", &task)).await["result"].clone();
    assert_eq!(got["resultType"], "complete");
    assert_eq!(got["status"], "working", "the task resolves at once: {got}");

    h.send(&request(3, "subscriptions/listen", TASK_CAPS, &format!(r#""notifications":{{"taskIds":[{task}]}}"#))).await;
    let ack = h.recv().await;
    assert_eq!(ack["params"]["notifications"], json!({"taskIds": [task]}), "{ack}");
    let done = h.recv().await;
    assert_eq!(done["method"], "notifications/tasks", "{done}");
    assert_eq!(done["params"]["_meta"][META_SUBSCRIPTION_ID], 3);
    assert_eq!(done["params"]["status"], "completed");
    assert_eq!(done["params"]["result"]["content"][0]["text"], "background work done");

    let got = h.ask(&task_request(4, "tasks/get", &task)).await["result"].clone();
    assert_eq!(got["status"], "completed");
    assert_eq!(got["result"]["content"][0]["text"], "background work done");
    assert!(got.get("requestState").is_none() && got["_meta"].get(META_RELATED_TASK).is_none(), "{got}");
}

#[tokio::test(start_paused = true)]
async fn quick_calls_and_clients_without_the_extension_are_answered_directly() {
    let mut h = Harness::new();
    let quick = h.ask(&call(1, TASK_CAPS, "fake_background", r#"{"ms":0}"#)).await["result"].clone();
    assert_eq!(quick["resultType"], "complete", "a call that ends at once needs no task: {quick}");
    let no_extension = h.ask(&call(2, "{}", "fake_background", r#"{"ms":300}"#)).await["result"].clone();
    assert_eq!(no_extension["resultType"], "complete", "no task for a client that cannot poll: {no_extension}");
    assert_eq!(no_extension["content"][0]["text"], "background work done");

    let refused = h.ask(&call(3, "{}", "fake_only_task", "{}")).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredCapabilities"], json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
    let required = h.ask(&call(4, TASK_CAPS, "fake_only_task", "{}")).await["result"].clone();
    assert_eq!(required["resultType"], "task", "a tool that requires a task always gets one: {required}");
    let got = h.poll_until(&required["taskId"], "completed").await;
    assert_eq!(got["result"]["content"][0]["text"], "only as a task");
}

#[tokio::test(start_paused = true)]
async fn input_rounds_finish_before_a_task_unless_the_plugin_asks_within_it() {
    let mut h = Harness::new();
    // Asked as an ordinary round: input_required first, with no task.
    let first = h.ask(&call(1, TASK_CAPS, "fake_greet_task", "{}")).await["result"].clone();
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert!(first.get("taskId").is_none());
    let retry = request(
        2,
        "tools/call",
        TASK_CAPS,
        &format!(
            r#""name":"fake_greet_task","arguments":{{}},"inputResponses":{{"user_name":{{"action":"accept","content":{{"name":"Alice"}}}}}},"requestState":{}"#,
            first["requestState"]
        ),
    );
    let created = h.ask(&retry).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("requestState").is_none() && created.get("inputRequests").is_none());
    let done = h.poll_until(&created["taskId"], "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Alice!");

    // Asked within a task: the task parks until `tasks/update` brings the answer.
    let created = h.ask(&call(3, TASK_CAPS, "fake_confirm", "{}")).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    let task = created["taskId"].clone();
    let parked = h.poll_until(&task, "input_required").await;
    assert_eq!(parked["inputRequests"]["confirm"]["method"], "elicitation/create", "{parked}");
    let update = request(4, "tasks/update", TASK_CAPS, &format!(r#""taskId":{task},"inputResponses":{{"stray":{{"ignored":true}}}}"#));
    let ack = h.ask(&update).await["result"].clone();
    assert_eq!(ack, json!({"resultType": "complete", "_meta": ack["_meta"].clone()}), "an empty ack: {ack}");
    assert_eq!(h.ask(&task_request(5, "tasks/get", &task)).await["result"]["status"], "input_required", "a stray answer changes nothing");
    let update = request(6, "tasks/update", TASK_CAPS, &format!(r#""taskId":{task},"inputResponses":{{"confirm":{{"action":"accept","content":{{}}}}}}"#));
    h.ask(&update).await;
    let done = h.poll_until(&task, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "confirmed: accept");
}

#[tokio::test(start_paused = true)]
async fn extension_tasks_cancel_idempotently_fail_on_errors_and_refuse_what_the_extension_lacks() {
    let mut h = Harness::new();
    let created = h.ask(&call(1, TASK_CAPS, "fake_background", r#"{"ms":60000}"#)).await["result"].clone();
    let task = created["taskId"].clone();
    let ack = h.ask(&task_request(2, "tasks/cancel", &task)).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert!(ack["result"].get("status").is_none(), "the cancel ack carries no task: {ack}");
    assert_eq!(h.ask(&task_request(3, "tasks/get", &task)).await["result"]["status"], "cancelled");
    let again = h.ask(&task_request(4, "tasks/cancel", &task)).await;
    assert_eq!(again["result"]["resultType"], "complete", "cancelling an ended task is acknowledged: {again}");

    let failing = h.ask(&call(5, TASK_CAPS, "fake_task_error", "{}")).await["result"].clone();
    assert_eq!(failing["resultType"], "task");
    let failed = h.poll_until(&failing["taskId"], "failed").await;
    assert_eq!(failed["error"]["code"], -32602, "{failed}");
    assert!(failed.get("result").is_none());

    assert_eq!(h.ask(&task_request(6, "tasks/result", &task)).await["error"]["code"], -32601);
    assert_eq!(h.ask(&request(7, "tasks/list", TASK_CAPS, r#""cursor":null"#)).await["error"]["code"], -32601);
    let undeclared = h.ask(&request(8, "tasks/get", "{}", &format!(r#""taskId":{task}"#))).await;
    assert_eq!(undeclared["error"]["code"], -32021, "{undeclared}");
    assert_eq!(h.ask(&task_request(9, "tasks/get", &json!("0123456789abcdef0123456789abcdef"))).await["error"]["code"], -32602);
    let discovered = h.ask(&request(10, "server/discover", "{}", r#""x":1"#)).await["result"]["capabilities"].clone();
    assert_eq!(discovered["extensions"], json!({"io.modelcontextprotocol/tasks": {}}));
    assert!(discovered.get("tasks").is_none());
}

fn legacy_task_call(id: u32, tool: &str, arguments: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"task":{{"ttl":60000}}}}}}"#)
}

fn legacy(id: u32, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
}

#[tokio::test(start_paused = true)]
async fn a_legacy_client_asks_for_a_task_lists_it_and_waits_for_its_result() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let created = h.ask(&legacy_task_call(1, "fake_background", r#"{"ms":300}"#)).await["result"].clone();
    let task = created["task"].clone();
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 60000);
    assert!(task["pollInterval"].is_u64() && task.get("ttlMs").is_none(), "{task}");
    let id = task["taskId"].clone();

    let listed = h.ask(&legacy(2, "tasks/list", "{}")).await["result"].clone();
    assert_eq!(listed["tasks"][0]["taskId"], id, "{listed}");
    h.send(&legacy(3, "tasks/result", &format!(r#"{{"taskId":{id}}}"#))).await;
    let frames = {
        let mut frames = Vec::new();
        while !frames.iter().any(|f: &Value| f["id"] == 3) {
            frames.push(h.recv().await);
        }
        frames
    };
    let status = frames.iter().find(|f| f["method"] == "notifications/tasks/status").expect("a status notification");
    assert_eq!(status["params"]["status"], "completed", "{status}");
    let result = &frames.iter().find(|f| f["id"] == 3).unwrap()["result"];
    assert_eq!(result["content"][0]["text"], "background work done", "{result}");
    assert_eq!(result["_meta"][META_RELATED_TASK]["taskId"], id);

    let cancel = h.ask(&legacy(4, "tasks/cancel", &format!(r#"{{"taskId":{id}}}"#))).await;
    assert_eq!(cancel["error"]["code"], -32602, "an ended task cannot be cancelled: {cancel}");
}

#[tokio::test(start_paused = true)]
async fn legacy_tasks_are_the_sessions_own_and_follow_each_tools_task_support() {
    let plugin = FakePlugin::new();
    let server = ServerState::new(Arc::new(Router::new(vec![RouterEntry::new(plugin, Prefix::Default)]).0), StateKey::random().expect("a key"));
    let mut h = Harness::on(Arc::clone(&server));
    h.initialize("2025-11-25").await;
    assert_eq!(h.ask(&legacy_task_call(1, "fake_echo", r#"{"text":"x"}"#)).await["error"]["code"], -32601, "echo does not run as a task");
    assert_eq!(h.ask(&legacy(2, "tools/call", r#"{"name":"fake_only_task","arguments":{}}"#)).await["error"]["code"], -32601);

    let created = h.ask(&legacy_task_call(3, "fake_background", r#"{"ms":60000}"#)).await["result"].clone();
    let id = created["task"]["taskId"].clone();
    let mut other = Harness::on(Arc::clone(&server));
    other.initialize("2025-11-25").await;
    assert_eq!(other.ask(&legacy(1, "tasks/get", &format!(r#"{{"taskId":{id}}}"#))).await["error"]["code"], -32602, "another session's task");
    assert_eq!(other.ask(&legacy(2, "tasks/list", "{}")).await["result"]["tasks"], json!([]));

    h.send(&legacy(4, "tasks/cancel", &format!(r#"{{"taskId":{id}}}"#))).await;
    let mut frames = [h.recv().await, h.recv().await];
    frames.sort_by_key(|f| f.get("id").is_some());
    assert_eq!(frames[0]["method"], "notifications/tasks/status", "{frames:?}");
    assert_eq!(frames[0]["params"]["status"], "cancelled");
    assert_eq!(frames[1]["result"]["status"], "cancelled", "{frames:?}");

    let mut older = Harness::on(server);
    older.initialize("2025-06-18").await;
    assert_eq!(older.ask(&legacy(1, "tasks/list", "{}")).await["error"]["code"], -32601, "tasks exist from 2025-11-25 on");
    let direct = older.ask(&legacy_task_call(2, "fake_background", r#"{"ms":0}"#)).await;
    assert_eq!(direct["result"]["content"][0]["text"], "background work done", "`task` is ignored where tasks do not exist");
}

#[tokio::test(start_paused = true)]
async fn a_legacy_task_waits_in_input_required_while_the_session_asks_its_client() {
    let mut h = Harness::new();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}"#;
    h.ask(init).await;
    let created = h.ask(&legacy_task_call(1, "fake_confirm", "{}")).await["result"].clone();
    let id = created["task"]["taskId"].clone();
    let mut question = None;
    let mut parked = false;
    while question.is_none() || !parked {
        let frame = h.recv().await;
        if frame["method"] == "elicitation/create" {
            question = Some(frame);
        } else if frame["method"] == "notifications/tasks/status" && frame["params"]["status"] == "input_required" {
            parked = true;
        }
    }
    let question = question.unwrap();
    assert_eq!(question["params"]["_meta"][META_RELATED_TASK]["taskId"], id, "{question}");
    h.send(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"action":"decline"}}}}"#, question["id"])).await;
    h.send(&legacy(2, "tasks/result", &format!(r#"{{"taskId":{id}}}"#))).await;
    loop {
        let frame = h.recv().await;
        if frame["id"] == 2 {
            assert_eq!(frame["result"]["content"][0]["text"], "confirmed: decline", "{frame}");
            break;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_finished_task_answers_every_time_until_its_time_to_live_ends() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fake_background","arguments":{"ms":0},"task":{"ttl":1000}}}"#;
    let created = h.reply_to(call).await["result"].clone();
    assert_eq!(created["task"]["ttl"], 1000, "{created}");
    let id = created["task"]["taskId"].clone();
    let result = |reply: &Value| reply["result"]["content"][0]["text"].clone();

    // The result is kept, not handed over once: asking again gets the same answer.
    let first = h.reply_to(&legacy(2, "tasks/result", &format!(r#"{{"taskId":{id}}}"#))).await;
    let again = h.reply_to(&legacy(3, "tasks/result", &format!(r#"{{"taskId":{id}}}"#))).await;
    assert_eq!(result(&first), "background work done", "{first}");
    assert_eq!(result(&again), result(&first), "{again}");
    assert_eq!(h.reply_to(&legacy(4, "tasks/get", &format!(r#"{{"taskId":{id}}}"#))).await["result"]["status"], "completed");

    // Once its time to live has passed, the id means nothing: the task and its result are freed.
    let expires = std::time::Instant::now() + Duration::from_millis(1000);
    let mut id_n = 10;
    let gone = loop {
        let reply = h.reply_to(&legacy(id_n, "tasks/result", &format!(r#"{{"taskId":{id}}}"#))).await;
        if reply.get("error").is_some() {
            break reply;
        }
        assert!(std::time::Instant::now() < expires + Duration::from_secs(5), "the task outlived its time to live: {reply}");
        id_n += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(std::time::Instant::now() >= expires - Duration::from_millis(100), "freed only once its time to live ended");
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    let got = h.reply_to(&legacy(id_n + 1, "tasks/get", &format!(r#"{{"taskId":{id}}}"#))).await;
    assert_eq!(got["error"]["code"], -32602, "{got}");
    assert_eq!(h.reply_to(&legacy(id_n + 2, "tasks/list", "{}")).await["result"]["tasks"], json!([]), "no longer listed");
}

#[tokio::test(start_paused = true)]
async fn an_extension_task_keeps_its_result_and_the_same_call_again_is_a_new_task() {
    let mut h = Harness::new();
    let caps = r#"{"extensions":{"io.modelcontextprotocol/tasks":{}}}"#;
    let created = h.ask(&call(1, caps, "fake_only_task", "{}")).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].clone();
    let done = h.poll_until(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "only as a task");
    // The same request again is a new task with a new id; the finished one is still there.
    let second = h.ask(&call(2, caps, "fake_only_task", "{}")).await["result"].clone();
    assert_ne!(second["taskId"], id, "every call gets its own task");
    assert_eq!(h.ask(&task_request(3, "tasks/get", &id)).await["result"]["status"], "completed");
    // A made-up or altered id is refused like an expired one.
    let altered = json!(format!("{}0", id.as_str().expect("an id")));
    assert_eq!(h.ask(&task_request(4, "tasks/get", &altered)).await["error"]["code"], -32602);
}

/// A plugin whose tools each end one way, every one running only as a task (`hold` runs until
/// cancelled; `crash_direct` may run directly).
struct Faults {
    id: &'static str,
    catalog: Catalog,
    /// `hold` runs going on now.
    holding: tokio::sync::watch::Sender<usize>,
}

impl Faults {
    const TOOLS: [&'static str; 10] = ["crash", "deadline", "memory", "output", "malformed", "failed", "own_error", "invalid", "hold", "crash_direct"];

    fn new(id: &'static str) -> Arc<Faults> {
        let support = |name| if name == "crash_direct" { crate::protocol::TaskSupport::Optional } else { crate::protocol::TaskSupport::Required };
        let tools = Faults::TOOLS
            .into_iter()
            .map(|name| Tool { execution: Some(crate::protocol::ToolExecution { task_support: support(name) }), ..tool(name) })
            .collect();
        Arc::new(Faults { id, catalog: Catalog { tools, ..Catalog::default() }, holding: tokio::sync::watch::channel(0).0 })
    }

    /// A server with plugins of these ids.
    fn served(ids: &[&'static str]) -> Arc<ServerState> {
        Faults::serve(ids.iter().map(|id| Faults::new(id)).collect())
    }

    fn serve(plugins: Vec<Arc<Faults>>) -> Arc<ServerState> {
        let entries = plugins.into_iter().map(|plugin| RouterEntry::new(plugin, Prefix::Default)).collect();
        ServerState::new(Arc::new(Router::new(entries).0), StateKey::random().expect("a key"))
    }
}

impl Plugin for Faults {
    fn id(&self) -> &str {
        self.id
    }
    fn catalog(&self) -> &Catalog {
        &self.catalog
    }
    fn call_tool<'a>(&'a self, tool: &'a str, _: &'a str, cx: &'a CallContext) -> BoxFuture<'a, Result<Outcome<CallToolResult>, PluginError>> {
        Box::pin(async move {
            match tool {
                "crash" | "crash_direct" => Err(PluginError::Trap("wasm trap: unreachable".into())),
                "deadline" => Err(PluginError::Timeout { ms: 30_000 }),
                "memory" => Err(PluginError::Limit { limit: crate::plugin::Limit::Memory }),
                "output" => Err(PluginError::Limit { limit: crate::plugin::Limit::Output }),
                "malformed" => Err(PluginError::MalformedOutput("JSON: expected value".into())),
                "failed" => Err(PluginError::Failed("the disk is full".into())),
                "own_error" => Ok(Outcome::Complete(CallToolResult::error("no such city"))),
                "invalid" => Err(PluginError::InvalidParams("no paths here".into())),
                "hold" => {
                    self.holding.send_modify(|n| *n += 1);
                    cx.cancelled().await;
                    self.holding.send_modify(|n| *n -= 1);
                    Err(PluginError::Cancelled)
                }
                _ => Err(PluginError::NotFound(tool.into())),
            }
        })
    }
    fn read_resource<'a>(&'a self, uri: &'a str, _: &'a CallContext) -> BoxFuture<'a, Result<Outcome<ReadResourceResult>, PluginError>> {
        Box::pin(async move { Err(PluginError::NotFound(uri.into())) })
    }
    fn get_prompt<'a>(&'a self, name: &'a str, _: &'a [(String, String)], _: &'a CallContext) -> BoxFuture<'a, Result<Outcome<GetPromptResult>, PluginError>> {
        Box::pin(async move { Err(PluginError::NotFound(name.into())) })
    }
    fn complete<'a>(&'a self, _: &'a CompletionRequest, _: &'a CallContext) -> BoxFuture<'a, Result<Completion, PluginError>> {
        Box::pin(async { Ok(Completion { values: vec![], total: None, has_more: false }) })
    }
}

/// The host-side faults, and what each task's error says.
const FAULTS: [(&str, &str); 6] = [
    ("crash", "plugin crashed: wasm trap: unreachable"),
    ("deadline", "plugin timed out after 30000 ms"),
    ("memory", "plugin exceeded its memory limit"),
    ("output", "plugin exceeded its output limit"),
    ("malformed", "plugin returned malformed output"),
    ("failed", "the disk is full"),
];

#[tokio::test(start_paused = true)]
async fn an_extension_task_whose_plugin_crashed_or_hit_a_limit_fails_while_the_tools_own_error_completes() {
    let mut h = Harness::on(Faults::served(&["faults"]));
    for (n, (tool, says)) in (1..).zip(FAULTS) {
        let created = h.ask(&call(n, TASK_CAPS, &format!("faults_{tool}"), "{}")).await["result"].clone();
        assert_eq!(created["resultType"], "task", "{tool}: {created}");
        let failed = h.poll_until(&created["taskId"], "failed").await;
        assert_eq!(failed["error"]["code"], -32603, "{tool}: {failed}");
        let message = failed["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("plugin `faults` failed") && message.contains(says), "{tool}: {failed}");
        assert_eq!(failed["statusMessage"], failed["error"]["message"], "{failed}");
        assert!(failed.get("result").is_none(), "{tool}: {failed}");
    }

    let own = h.ask(&call(10, TASK_CAPS, "faults_own_error", "{}")).await["result"].clone();
    let completed = h.poll_until(&own["taskId"], "completed").await;
    assert_eq!(completed["result"]["isError"], true, "the tool's own error result completes the task: {completed}");
    assert_eq!(completed["result"]["content"][0]["text"], "no such city");
    assert!(completed.get("error").is_none());

    // A refusal by the plugin before any task exists is the call's error (a task that runs
    // into one fails with it: `fake_task_error`).
    let invalid = h.ask(&call(11, TASK_CAPS, "faults_invalid", "{}")).await;
    assert_eq!(invalid["error"]["code"], -32602, "{invalid}");

    // The same fault answered directly, before any task exists, is the usual `isError` result.
    let direct = h.ask(&call(12, TASK_CAPS, "faults_crash_direct", "{}")).await["result"].clone();
    assert_eq!((&direct["resultType"], &direct["isError"]), (&json!("complete"), &json!(true)), "{direct}");
    assert!(direct["content"][0]["text"].as_str().is_some_and(|t| t.contains("plugin crashed")), "{direct}");

    let held = h.ask(&call(13, TASK_CAPS, "faults_hold", "{}")).await["result"].clone();
    h.ask(&task_request(14, "tasks/cancel", &held["taskId"])).await;
    assert_eq!(h.poll_until(&held["taskId"], "cancelled").await["status"], "cancelled");
}

#[tokio::test(start_paused = true)]
async fn a_legacy_task_whose_plugin_crashed_or_hit_a_limit_fails_and_its_result_is_the_calls() {
    let mut h = Harness::on(Faults::served(&["faults"]));
    h.initialize("2025-11-25").await;
    for (n, (tool, says)) in (1..).zip(FAULTS.into_iter().chain([("own_error", "no such city")])) {
        let created = h.reply_to(&legacy_task_call(n * 10, &format!("faults_{tool}"), "{}")).await["result"].clone();
        let id = created["task"]["taskId"].clone();
        let result = h.reply_to(&legacy(n * 10 + 1, "tasks/result", &format!(r#"{{"taskId":{id}}}"#))).await;
        assert_eq!(result["result"]["isError"], true, "{tool}: what the call would have answered: {result}");
        assert!(result["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains(says)), "{tool}: {result}");
        assert_eq!(result["result"]["_meta"][META_RELATED_TASK]["taskId"], id);
        let got = h.reply_to(&legacy(n * 10 + 2, "tasks/get", &format!(r#"{{"taskId":{id}}}"#))).await;
        assert_eq!(got["result"]["status"], "failed", "{tool}: 2025-11-25 fails a task on any error result: {got}");
    }
}

/// The client at `address`.
fn client_key(address: &str) -> crate::identity::ClientKey {
    crate::identity::ClientKey::of(address.parse().expect("an address"))
}

/// A channel of `server` whose requests come from the client at `address`.
fn client_at(server: &Arc<ServerState>, address: &str) -> Harness {
    let (tx, rx) = outbound(OutboundLimits::default());
    Harness { session: Session::one_request_from(Arc::clone(server), tx, client_key(address), Principal::anonymous()), rx }
}

#[tokio::test(start_paused = true)]
async fn one_clients_finished_tasks_never_refuse_another_and_an_evicted_result_says_so() {
    let server = Faults::served(&["faults"]);
    let mut busy = client_at(&server, "192.0.2.1");
    let mut first = Value::Null;
    // Far more quick tasks than the client may hold, each polled to its end.
    for n in 0..crate::tasks::MAX_TASKS_PER_CLIENT as u32 + 8 {
        let created = busy.ask(&call(n, TASK_CAPS, "faults_own_error", "{}")).await["result"].clone();
        assert_eq!(created["resultType"], "task", "task {n}: {created}");
        busy.poll_until(&created["taskId"], "completed").await;
        if n == 0 {
            first = created["taskId"].clone();
        }
    }
    let gone = busy.ask(&task_request(500, "tasks/get", &first)).await["error"].clone();
    assert_eq!(gone["code"], -32602, "{gone}");
    assert!(gone["message"].as_str().is_some_and(|m| m.contains("evicted to make room")), "{gone}");
    assert_eq!(gone["data"]["evicted"], true);
    let unknown = busy.ask(&task_request(501, "tasks/get", &json!("0123456789abcdef0123456789abcdef"))).await["error"].clone();
    assert!(unknown["message"].as_str().is_some_and(|m| m.starts_with("unknown task")) && unknown.get("data").is_none(), "{unknown}");

    let mut other = client_at(&server, "192.0.2.2");
    let created = other.ask(&call(1, TASK_CAPS, "faults_own_error", "{}")).await["result"].clone();
    assert_eq!(created["resultType"], "task", "another client is served: {created}");
    assert_eq!(server.tasks.len(), crate::tasks::MAX_TASKS_PER_CLIENT + 1);
}

#[tokio::test(start_paused = true)]
async fn a_client_whose_tasks_all_run_is_refused_as_busy_naming_its_quota_and_only_it() {
    let c = Faults::new("c");
    let server = Faults::serve(vec![Faults::new("a"), Faults::new("b"), Arc::clone(&c)]);
    let mut greedy = client_at(&server, "192.0.2.1");
    // Its quota of running tasks, half on each of two plugins (each may run 32).
    let quota = crate::tasks::MAX_TASKS_PER_CLIENT as u32;
    for n in 0..quota {
        greedy.send(&call(n, TASK_CAPS, if n % 2 == 0 { "a_hold" } else { "b_hold" }, "{}")).await;
    }
    for _ in 0..quota {
        let reply = greedy.recv().await;
        assert_eq!(reply["result"]["resultType"], "task", "{reply}");
    }
    let mut holding = c.holding.subscribe();
    let refused = greedy.ask(&call(100, TASK_CAPS, "c_hold", "{}")).await;
    assert_eq!(refused["error"]["code"], SERVER_BUSY, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&format!("{quota} tasks running, its quota")), "{refused}");
    assert!(holding.has_changed().expect("alive"), "the refused call's first run started");
    tokio::time::timeout(WAIT, holding.wait_for(|n| *n == 0)).await.expect("in time").expect("alive");
    assert_eq!(server.tasks.len(), quota as usize, "a refused call's run is stopped, and no task is left of it");

    let mut other = client_at(&server, "192.0.2.2");
    let created = other.ask(&call(1, TASK_CAPS, "c_hold", "{}")).await["result"].clone();
    assert_eq!(created["resultType"], "task", "another client still gets a task: {created}");
    let plugin_full = other.ask(&call(2, TASK_CAPS, "a_hold", "{}")).await;
    assert_eq!(plugin_full["error"]["code"], SERVER_BUSY, "a plugin's own limit is busy too: {plugin_full}");
    assert!(plugin_full["error"]["message"].as_str().is_some_and(|m| m.contains("plugin `a`")), "{plugin_full}");
}

/// A channel of `server` whose requests are served for `principal`.
fn served_for(server: &Arc<ServerState>, principal: Principal) -> Harness {
    let (tx, rx) = outbound(OutboundLimits::default());
    Harness { session: Session::one_request_from(Arc::clone(server), tx, client_key("192.0.2.9"), principal), rx }
}

#[tokio::test(start_paused = true)]
async fn another_principals_task_and_request_state_are_answered_like_unknown_ones() {
    let server = Faults::served(&["faults"]);
    let mut alice = served_for(&server, Principal::token("alice", Vec::new()));
    let mut bob = served_for(&server, Principal::token("bob", Vec::new()));

    let created = alice.ask(&call(1, TASK_CAPS, "faults_own_error", "{}")).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].clone();
    alice.poll_until(&id, "completed").await;
    let theirs = bob.ask(&task_request(2, "tasks/get", &id)).await;
    let never = bob.ask(&task_request(3, "tasks/get", &json!("0123456789abcdef0123456789abcdef"))).await;
    assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
    assert_eq!(
        theirs["error"]["message"].as_str().map(|m| m.replace(id.as_str().unwrap_or_default(), "ID")),
        never["error"]["message"].as_str().map(|m| m.replace("0123456789abcdef0123456789abcdef", "ID")),
        "the same answer as for a task that never was"
    );
    let cancelled = bob.ask(&task_request(4, "tasks/cancel", &id)).await;
    assert_eq!(cancelled["error"]["code"], -32602, "{cancelled}");
    let mine = alice.ask(&task_request(5, "tasks/get", &id)).await;
    assert_eq!(mine["result"]["status"], "completed", "the owner still sees it: {mine}");
}

#[tokio::test(start_paused = true)]
async fn an_authenticated_principal_has_its_own_task_quota_wherever_it_calls_from() {
    let server = Faults::serve(vec![Faults::new("a"), Faults::new("b"), Faults::new("c")]);
    let at = |principal: Principal| {
        let (tx, rx) = outbound(OutboundLimits::default());
        Harness { session: Session::one_request_from(Arc::clone(&server), tx, client_key("192.0.2.1"), principal), rx }
    };
    let (mut alice, mut bob) = (at(Principal::token("alice", Vec::new())), at(Principal::token("bob", Vec::new())));
    let quota = crate::tasks::MAX_TASKS_PER_CLIENT as u32;
    for n in 0..quota {
        alice.send(&call(n, TASK_CAPS, if n % 2 == 0 { "a_hold" } else { "b_hold" }, "{}")).await;
    }
    for _ in 0..quota {
        let reply = alice.recv().await;
        assert_eq!(reply["result"]["resultType"], "task", "{reply}");
    }
    let refused = alice.ask(&call(100, TASK_CAPS, "c_hold", "{}")).await;
    assert_eq!(refused["error"]["code"], SERVER_BUSY, "alice is at her quota: {refused}");
    let created = bob.ask(&call(1, TASK_CAPS, "c_hold", "{}")).await["result"].clone();
    assert_eq!(created["resultType"], "task", "bob, from the same address, has a quota of his own: {created}");
    let mut alice_elsewhere = {
        let (tx, rx) = outbound(OutboundLimits::default());
        Harness { session: Session::one_request_from(Arc::clone(&server), tx, client_key("198.51.100.7"), Principal::token("alice", Vec::new())), rx }
    };
    let still = alice_elsewhere.ask(&call(2, TASK_CAPS, "c_hold", "{}")).await;
    assert_eq!(still["error"]["code"], SERVER_BUSY, "and alice's quota follows her to another address: {still}");
}

#[tokio::test(start_paused = true)]
async fn a_listen_stream_hears_only_its_own_principals_tasks() {
    let server = ServerState::new(Arc::new(Router::new(vec![RouterEntry::new(FakePlugin::new(), Prefix::Default)]).0), StateKey::random().expect("a key"));
    let mut alice = served_for(&server, Principal::token("alice", Vec::new()));
    let mut bob = served_for(&server, Principal::token("bob", Vec::new()));
    let created = alice.ask(&call(1, TASK_CAPS, "fake_background", r#"{"ms":600}"#)).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    let task = created["taskId"].clone();
    // Bob listens for alice's task by its id; alice listens too.
    bob.send(&request(2, "subscriptions/listen", TASK_CAPS, &format!(r#""notifications":{{"taskIds":[{task}]}}"#))).await;
    assert_eq!(bob.recv().await["method"], "notifications/subscriptions/acknowledged");
    alice.send(&request(3, "subscriptions/listen", TASK_CAPS, &format!(r#""notifications":{{"taskIds":[{task}]}}"#))).await;
    assert_eq!(alice.recv().await["method"], "notifications/subscriptions/acknowledged");
    let done = alice.recv().await;
    assert_eq!(done["params"]["status"], "completed", "the owner hears it: {done}");
    assert!(tokio::time::timeout(Duration::from_millis(200), bob.rx.recv()).await.is_err(), "bob hears nothing of alice's task");
}
