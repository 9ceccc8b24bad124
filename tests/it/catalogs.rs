//! Hostile catalogs, results and resource templates from `tests/plugins/bad-catalog`, served
//! beside the sample `text` plugin by the real binary: every bad variant is refused at load
//! naming the plugin and the item while `text` keeps a working `tools/list`, each variant's
//! permitted twin (the variable unset) serves, unserializable results are tool errors, and
//! reads of long adversarial URIs answer at once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use paddock_tests::{PluginDir, StdioHost, first_text, fixture_wasm, run_paddock, sample_wasm};
use serde_json::{Value, json};

/// Each `BAD_CATALOG` variant and what the refusal must say about it.
const VARIANTS: [(&str, &str); 7] = [
    ("deep-schema", "tool `deep_schema`: input schema nests deeper than 64 levels"),
    ("surrogate", "tool `surrogate`: input schema has a lone surrogate escape `\\ud800`"),
    ("huge-schema", "tool `huge_schema`: input schema is 262145 bytes; at most 262144 are allowed"),
    ("deep-meta", "tool `deep_meta`: `_meta` nests deeper than 64 levels"),
    ("big-number", "tool `big_number`: output schema is not valid JSON: number out of range"),
    ("bad-template", "is 1025 bytes long; at most 1024 are allowed"),
    ("many-vars", "has 33 variables; at most 32 are allowed"),
];

/// A folder with `text` and `badcat`, whose grant sets `BAD_CATALOG` when `variant` is given.
fn folder(variant: Option<&str>) -> PluginDir {
    let plugins = PluginDir::new().add("text", &sample_wasm("text")).add("badcat", &fixture_wasm("bad-catalog"));
    match variant {
        Some(variant) => plugins.write("badcat.toml", format!("env = {{ BAD_CATALOG = \"{variant}\" }}\n")),
        None => plugins,
    }
}

fn names(list: &Value, field: &str, key: &str) -> Vec<String> {
    list["result"][field].as_array().map(|items| items.iter().filter_map(|i| i[key].as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

async fn serve(plugins: &PluginDir) -> StdioHost {
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");
    host
}

#[tokio::test]
async fn check_names_the_plugin_and_item_of_each_bad_catalog_and_exits_1() {
    for (variant, expected) in VARIANTS {
        let plugins = folder(Some(variant));
        let (code, stdout, stderr) = run_paddock(&["check", plugins.path().to_str().expect("utf-8")]).await.expect("run check");
        assert_eq!(code, 1, "{variant}:\n{stdout}\n{stderr}");
        let line = stderr.lines().find(|l| l.contains("badcat.wasm")).unwrap_or_else(|| panic!("{variant} not reported:\n{stderr}"));
        assert!(line.contains("plugin `badcat` not loaded, its catalog is refused") && line.contains(expected), "{variant}: {line}");
        assert!(stdout.contains("1 plugin(s) ready") && stdout.contains("1 problem(s) found"), "{variant}:\n{stdout}");
    }
    let twin = folder(None);
    let (code, stdout, stderr) = run_paddock(&["check", twin.path().to_str().expect("utf-8")]).await.expect("run check");
    assert_eq!(code, 0, "the permitted twin checks clean:\n{stdout}\n{stderr}");
    assert!(stdout.contains("2 plugin(s) ready"), "{stdout}");
}

#[tokio::test]
async fn serve_keeps_a_working_tools_list_beside_each_bad_catalog() {
    for (variant, _) in VARIANTS {
        let plugins = folder(Some(variant));
        let mut host = serve(&plugins).await;
        let tools = host.request("tools/list", json!({})).await.expect("tools/list");
        let listed = names(&tools, "tools", "name");
        assert!(listed.contains(&"text_echo".to_owned()), "{variant}: {tools}");
        assert!(!listed.iter().any(|n| n.starts_with("badcat_")), "{variant}: the bad plugin is served: {listed:?}");
        let templates = host.request("resources/templates/list", json!({})).await.expect("templates");
        assert!(templates["result"]["resourceTemplates"].is_array(), "{variant}: {templates}");
        let echoed = host.call_tool("text_echo", json!({"text": variant})).await.expect("call");
        assert_eq!(first_text(&echoed), variant);
        assert_eq!(host.close().await.expect("exit"), 0);
    }
}

#[tokio::test]
async fn the_permitted_twin_serves_every_item_at_the_caps() {
    let plugins = folder(None);
    let mut host = serve(&plugins).await;
    let tools = host.request("tools/list", json!({})).await.expect("tools/list");
    let listed = names(&tools, "tools", "name");
    for name in ["text_echo", "badcat_deep_schema", "badcat_surrogate", "badcat_huge_schema", "badcat_deep_meta", "badcat_big_number"] {
        assert!(listed.contains(&name.to_owned()), "{name} missing: {listed:?}");
    }
    let all = tools["result"]["tools"].as_array().expect("tools");
    let tool = |name: &str| all.iter().find(|t| t["name"] == name).expect("listed").clone();
    let mut schema = tool("badcat_deep_schema")["inputSchema"].clone();
    for _ in 1..64 {
        schema = schema["properties"].clone();
    }
    assert_eq!(schema, json!({}), "the input schema arrives 64 levels deep");
    assert_eq!(tool("badcat_surrogate")["inputSchema"]["title"], "😀");
    assert_eq!(tool("badcat_huge_schema")["inputSchema"].to_string().len(), 256 << 10);
    let templates = host.request("resources/templates/list", json!({})).await.expect("templates");
    let templates = names(&templates, "resourceTemplates", "uriTemplate");
    assert!(templates.contains(&format!("a://{}!", "{v}".repeat(32))) && templates.contains(&"cal://{year}-{month}-{day}".to_owned()), "{templates:?}");
    let echoed = host.call_tool("badcat_echo", json!({"text": "twin"})).await.expect("call");
    assert_eq!(first_text(&echoed), "twin");
    assert_eq!(host.close().await.expect("exit"), 0);
}

#[tokio::test]
async fn an_unserializable_result_is_a_tool_error_naming_the_problem_and_calls_go_on() {
    let plugins = folder(None);
    let mut host = serve(&plugins).await;
    for (kind, expected) in [
        ("deep", "structured content nests deeper than 64 levels"),
        ("surrogate", "structured content has a lone surrogate escape `\\ud800`"),
        ("deep-meta", "result `_meta` nests deeper than 64 levels"),
        ("number", "structured content is not valid JSON: number out of range"),
    ] {
        let result = host.call_tool("badcat_bad_result", json!({"kind": kind})).await.expect("a result, not a JSON-RPC error");
        assert_eq!(result["isError"], true, "{kind}: {result}");
        assert!(first_text(&result).contains(expected), "{kind}: {result}");
        let ping = host.request("ping", json!({})).await.expect("ping");
        assert_eq!(ping["result"], json!({}), "{kind}");
        let echoed = host.call_tool("text_echo", json!({"text": kind})).await.expect("call");
        assert_eq!(first_text(&echoed), kind);
    }
    let edge = host.call_tool("badcat_bad_result", json!({"kind": "edge"})).await.expect("call");
    assert_ne!(edge["isError"], true, "{edge}");
    assert_eq!(edge["_meta"]["s"], "😀");
    assert_eq!(host.close().await.expect("exit"), 0);
}

#[tokio::test]
async fn adversarial_template_reads_answer_within_a_second_and_other_calls_go_on() {
    let plugins = folder(None);
    let mut host = serve(&plugins).await;
    // Warm the plugins up so the timing below measures routing, not a first instantiation.
    let warm = host.request("resources/read", json!({"uri": "cal://2025-01-02"})).await.expect("read");
    assert_eq!(warm["result"]["contents"][0]["text"], "read 16 bytes", "{warm}");
    assert_eq!(first_text(&host.call_tool("text_echo", json!({"text": "warm"})).await.expect("call")), "warm");
    // An ordinary read, ping and call on this machine now: the bound below is stated against it,
    // so a loaded runner widens it; a backtracking matcher would still take minutes.
    let baseline_started = Instant::now();
    host.request("resources/read", json!({"uri": "cal://2025-01-03"})).await.expect("read");
    host.request("ping", json!({})).await.expect("ping");
    host.call_tool("text_echo", json!({"text": "baseline"})).await.expect("call");
    let bound = (baseline_started.elapsed() * 20).max(Duration::from_secs(1));

    // Each takes a backtracking matcher minutes or longer: 8 KiB against `a://{v}…{v}!` (32
    // variables) and against `cal://{year}-{month}-{day}` with no match, and one byte over the cap.
    let reads = [
        format!("a://{}", "x".repeat(8188)),
        format!("cal://{}/", "1-".repeat(4092)),
        format!("cal://{}//", "1-".repeat(4092)),
        format!("a://{}", "x".repeat(8189)),
    ];
    let started = Instant::now();
    let mut expected: HashMap<i64, &str> = HashMap::new();
    for (i, uri) in reads.iter().enumerate() {
        let id = 100 + i as i64;
        host.send_line(&json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}}).to_string()).await.expect("send");
        expected.insert(id, "read");
    }
    host.send_line(&json!({"jsonrpc": "2.0", "id": 200, "method": "ping"}).to_string()).await.expect("send");
    expected.insert(200, "ping");
    host.send_line(
        &json!({"jsonrpc": "2.0", "id": 201, "method": "tools/call", "params": {"name": "text_echo", "arguments": {"text": "answered"}}}).to_string(),
    )
    .await
    .expect("send");
    expected.insert(201, "call");
    while !expected.is_empty() {
        let reply = host.recv().await.expect("a reply");
        let Some(id) = reply["id"].as_i64() else { continue };
        match expected.remove(&id) {
            Some("read") => {
                assert_eq!(reply["error"]["code"], -32002, "read {id} is an unknown resource");
            }
            Some("ping") => assert_eq!(reply["result"], json!({})),
            Some(_) => assert_eq!(first_text(&reply["result"]), "answered"),
            None => panic!("unexpected reply {id}"),
        }
    }
    let took = started.elapsed();
    assert!(took < bound, "the reads, the ping and the call took {took:?} (bound {bound:?})");
    assert_eq!(host.close().await.expect("exit"), 0);
}
