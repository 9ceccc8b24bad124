//! What an operator sees: the metrics listener scraped by a real Prometheus (from the Debian
//! package) and checked by `promtool`, label sets that stay bounded whatever clients send, and
//! the listener's own guard (loopback, token, nothing but `/metrics`).

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use paddock_tests::http::{HttpHost, modern_meta};
use paddock_tests::{PluginDir, WAIT, fixture_wasm, free_port, installed_tool, run_paddock};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// A host serving the fixture plugin over HTTP with metrics on, and its metrics URL.
async fn host_with_metrics(extra: &[&str]) -> Result<(PluginDir, HttpHost, String)> {
    let dir = PluginDir::new().add("fixture", &fixture_wasm("fixture"));
    let mut args = vec!["--metrics", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let host = HttpHost::start(dir.path(), &args).await?;
    let line = host.wait_for_log("metrics_address").await?;
    let record: Value = serde_json::from_str(&line)?;
    let addr = record.pointer("/fields/metrics_address").or_else(|| record.get("metrics_address")).and_then(Value::as_str).context("metrics_address")?;
    Ok((dir, host, format!("http://{addr}/metrics")))
}

/// One 2026-07-28 request on `client`'s connection; the JSON-RPC response.
async fn request(client: &reqwest::Client, host: &HttpHost, method: &str, mut params: Value) -> Result<Value> {
    params["_meta"] = modern_meta(json!({}));
    post_traced(client, host, method, params, None).await
}

async fn scrape(url: &str) -> Result<String> {
    let response = reqwest::get(url).await?;
    if response.status() != 200 {
        bail!("scrape answered {}", response.status());
    }
    Ok(response.text().await?)
}

/// The value of the series written exactly `series` (name and labels).
fn value(exposition: &str, series: &str) -> Option<f64> {
    exposition.lines().find_map(|line| line.strip_prefix(series).and_then(|rest| rest.strip_prefix(' '))).and_then(|v| v.parse().ok())
}

/// Every series of an exposition (name and labels, without the value).
fn series(exposition: &str) -> BTreeSet<String> {
    exposition.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).filter_map(|l| l.rsplit_once(' ').map(|(s, _)| s.to_owned())).collect()
}

/// Calls of every kind a client controls the text of: tool arguments, templated URIs, unknown
/// names, prompt arguments, a refused read.
async fn varied_calls(client: &reqwest::Client, host: &HttpHost, from: usize, count: usize) -> Result<()> {
    for i in from..from + count {
        let response = match i % 5 {
            0 => request(client, host, "tools/call", json!({"name": "fixture_echo", "arguments": {"text": format!("hello {i}")}})).await?,
            1 => request(client, host, "resources/read", json!({"uri": format!("fixture://echo/{i}")})).await?,
            2 => request(client, host, "tools/call", json!({"name": format!("unknown_{i}"), "arguments": {}})).await?,
            3 => request(client, host, "prompts/get", json!({"name": "fixture_greet", "arguments": {"who": format!("caller {i}")}})).await?,
            _ => request(client, host, "tools/call", json!({"name": "fixture_read", "arguments": {"path": format!("/nowhere/{i}")}})).await?,
        };
        if response.get("result").is_none() && response.get("error").is_none() {
            bail!("call {i} got neither a result nor an error: {response}");
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_real_prometheus_scrapes_the_request_counts_and_latency_histograms_and_promtool_accepts_them() -> Result<()> {
    let (Some(prometheus), Some(promtool)) = (installed_tool("prometheus", "prometheus"), installed_tool("promtool", "prometheus")) else {
        return Ok(());
    };
    let (_dir, host, metrics) = host_with_metrics(&[]).await?;
    let client = reqwest::Client::new();
    for i in 0..5 {
        let ok = request(&client, &host, "tools/call", json!({"name": "fixture_echo", "arguments": {"text": i.to_string()}})).await?;
        assert_eq!(ok.pointer("/result/isError").and_then(Value::as_bool), None, "{ok}");
    }
    let failed = request(&client, &host, "tools/call", json!({"name": "fixture_read", "arguments": {"path": "/etc/passwd"}})).await?;
    assert_eq!(failed.pointer("/result/isError"), Some(&json!(true)), "a refused read is a tool error: {failed}");
    let refused = request(&client, &host, "tools/call", json!({"name": "fixture_http_get", "arguments": {"url": "http://127.0.0.1:9/"}})).await?;
    assert_eq!(refused.pointer("/result/isError"), Some(&json!(true)), "an ungranted fetch is refused: {refused}");
    let unknown = request(&client, &host, "tools/call", json!({"name": "no_such_tool", "arguments": {}})).await?;
    assert!(unknown.get("error").is_some(), "{unknown}");

    let text = scrape(&metrics).await?;
    let calls =
        |outcome: &str| format!("paddock_requests_total{{method=\"tools/call\",transport=\"streamable-http\",era=\"stateless\",outcome=\"{outcome}\"}}");
    assert_eq!(value(&text, &calls("ok")), Some(5.0), "{text}");
    assert_eq!(value(&text, &calls("tool_error")), Some(2.0), "an isError result counts as an error outcome:\n{text}");
    assert_eq!(value(&text, &calls("invalid_params")), Some(1.0), "{text}");
    let echo = "{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"fixture_echo\"}";
    assert_eq!(value(&text, &format!("mcp_server_operation_duration_seconds_count{echo}")), Some(5.0), "{text}");
    assert!(!text.contains("no_such_tool"), "a name the router does not serve is never a label:\n{text}");
    assert_eq!(value(&text, "paddock_plugin_calls_total{plugin=\"fixture\",outcome=\"ok\"}"), Some(7.0), "{text}");
    assert!(value(&text, "paddock_plugin_refusals_total{plugin=\"fixture\",kind=\"network\"}").is_some_and(|n| n >= 1.0), "{text}");
    assert_eq!(value(&text, "paddock_plugins_serving"), Some(1.0), "{text}");

    let mut check = Command::new(&promtool).args(["check", "metrics"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    check.stdin.take().context("stdin")?.write_all(text.as_bytes()).await?;
    let checked = tokio::time::timeout(WAIT, check.wait_with_output()).await??;
    assert!(
        checked.status.success(),
        "promtool check metrics refused the exposition:\n{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );

    // A real Prometheus on loopback scrapes the listener, and answers queries over its HTTP API.
    let data = tempfile::tempdir()?;
    let target = metrics.trim_start_matches("http://").trim_end_matches("/metrics");
    let config = data.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: paddock\n    static_configs:\n      - targets: ['{target}']\n"),
    )?;
    let port = free_port();
    let mut server = Command::new(&prometheus)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", data.path().join("tsdb").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--storage.tsdb.retention.time=1h")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("start prometheus")?;
    let api = format!("http://127.0.0.1:{port}/api/v1/query");
    let count = "paddock_requests_total{method=\"tools/call\",outcome=\"ok\"}";
    let scraped = until(|| query(&client, &api, count), |v| *v == Some(5.0)).await;
    if scraped.is_err() {
        server.start_kill()?;
        let output = server.wait_with_output().await?;
        bail!("Prometheus never saw the count: {scraped:?}\n{}", String::from_utf8_lossy(&output.stderr));
    }
    let all = query(&client, &api, "mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name=\"fixture_echo\",le=\"+Inf\"}").await?;
    assert_eq!(all, Some(5.0), "the histogram's +Inf bucket holds every call");
    let median =
        query(&client, &api, "histogram_quantile(0.5, sum by (le) (mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name=\"fixture_echo\"}))").await?;
    assert!(median.is_some_and(|s| s > 0.0 && s < 1.0), "a median latency in seconds: {median:?}");
    let errors = query(&client, &api, "sum(paddock_requests_total{outcome=\"tool_error\"})").await?;
    assert_eq!(errors, Some(2.0));

    // Every query of the Grafana dashboard is one this Prometheus accepts.
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(paddock_tests::repo_root().join("host/grafana/paddock.json"))?)?;
    let mut exprs = Vec::new();
    collect_exprs(&dashboard, &mut exprs);
    assert!(exprs.len() >= 20);
    for expr in exprs {
        let promql = expr.replace("$__rate_interval", "1m").replace("$instance", ".*");
        query(&client, &api, &promql).await.with_context(|| format!("the dashboard's query `{expr}`"))?;
    }
    Ok(())
}

fn collect_exprs(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(object) => object.iter().for_each(|(key, value)| match (key.as_str(), value) {
            ("expr", Value::String(expr)) => found.push(expr.clone()),
            _ => collect_exprs(value, found),
        }),
        Value::Array(items) => items.iter().for_each(|item| collect_exprs(item, found)),
        _ => {}
    }
}

/// The first value of an instant query, if the result has one.
async fn query(client: &reqwest::Client, api: &str, promql: &str) -> Result<Option<f64>> {
    let encoded: String =
        promql.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { char::from(b).to_string() } else { format!("%{b:02X}") }).collect();
    let answer: Value = client.get(format!("{api}?query={encoded}")).send().await?.json().await?;
    if answer["status"] != "success" {
        bail!("query {promql} failed: {answer}");
    }
    Ok(answer.pointer("/data/result/0/value/1").and_then(Value::as_str).and_then(|v| v.parse().ok()))
}

/// Polls `probe` until `done` holds of its answer (Prometheus has no way to say it scraped).
async fn until<T: std::fmt::Debug, F: Future<Output = Result<T>>>(mut probe: impl FnMut() -> F, done: impl Fn(&T) -> bool) -> Result<T> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let last = probe().await;
        if let Ok(value) = &last
            && done(value)
        {
            return last;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("gave up waiting; last answer {last:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn ten_thousand_calls_with_distinct_arguments_and_uris_leave_the_series_count_unchanged() -> Result<()> {
    let (_dir, host, metrics) = host_with_metrics(&[]).await?;
    let client = reqwest::Client::new();
    varied_calls(&client, &host, 0, 10).await?;
    let before = series(&scrape(&metrics).await?);
    varied_calls(&client, &host, 10, 10_000).await?;
    let text = scrape(&metrics).await?;
    let after = series(&text);
    let added: Vec<&String> = after.difference(&before).collect();
    assert!(added.is_empty(), "10,000 calls with client-chosen text added series: {added:?}");
    assert_eq!(before.len(), after.len());
    let calls = "paddock_requests_total{method=\"tools/call\",transport=\"streamable-http\",era=\"stateless\",outcome=\"ok\"}";
    assert_eq!(value(&text, calls), Some(2002.0), "every echo was counted (the refused reads are tool errors):\n{text}");
    Ok(())
}

#[tokio::test]
async fn the_metrics_listener_is_loopback_unless_a_token_guards_it_and_serves_nothing_else() -> Result<()> {
    let dir = PluginDir::new().add("fixture", &fixture_wasm("fixture"));
    let path = dir.path().to_str().context("path")?;
    let (code, _, stderr) = run_paddock(&["serve", path, "--metrics", "0.0.0.0:0"]).await?;
    assert_ne!(code, 0);
    assert!(stderr.contains("--metrics-token-file"), "the refusal names the fix: {stderr}");

    let token = "metrics-scraper-token-0123456789abcdef";
    let token_dir = tempfile::tempdir()?;
    let token_file = token_dir.path().join("token");
    std::fs::write(&token_file, format!("{token}\n"))?;
    let (_dir, host, metrics) = host_with_metrics(&["--metrics-token-file", token_file.to_str().context("path")?]).await?;
    let client = reqwest::Client::new();
    assert_eq!(client.get(&metrics).send().await?.status(), 401);
    assert_eq!(client.get(&metrics).bearer_auth("wrong-token-0123456789abcdefghij").send().await?.status(), 401);
    let scraped = client.get(&metrics).bearer_auth(token).send().await?;
    assert_eq!(scraped.status(), 200);
    assert!(scraped.headers()["content-type"].to_str()?.starts_with("text/plain; version=0.0.4"));
    let text = scraped.text().await?;
    assert!(text.contains("paddock_build_info"));
    assert_eq!(value(&text, "paddock_http_refused_total{reason=\"metrics_401\"}"), Some(2.0), "{text}");
    let logged = host.wait_for_log("a metrics scrape was refused").await?;
    assert!(logged.contains("127.0.0.1"), "the refusal names the peer: {logged}");
    let elsewhere = metrics.replace("/metrics", "/mcp");
    assert_eq!(client.post(&elsewhere).bearer_auth(token).send().await?.status(), 404, "the metrics listener serves nothing but /metrics");
    assert_eq!(client.get(host.url("/metrics")).send().await?.status(), 404, "the MCP listener never shows metrics");
    Ok(())
}

/// One span as the OTLP receiver decoded it.
#[derive(Debug, Clone)]
struct Received {
    name: String,
    kind: i32,
    trace_id: String,
    span_id: String,
    parent: String,
    attributes: Vec<(String, String)>,
    error: bool,
    /// The `service.name` of the export's resource.
    service: String,
    /// The head of the HTTP request the span came in.
    head: String,
}

impl Received {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads one HTTP/1.1 request (head and `Content-Length` body) from `socket`.
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let read = socket.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")).and_then(|(_, v)| v.trim().parse::<usize>().ok()))
        .unwrap_or(0);
    let mut body = buffer[head_end..].to_vec();
    while body.len() < length {
        let read = socket.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        body.extend_from_slice(&chunk[..read]);
    }
    Some((head, body))
}

/// One histogram data point of an OTLP metrics export: the metric, its attributes, its count.
type Point = (String, Vec<(String, String)>, u64);

/// What the OTLP receiver decoded: spans, and histogram points.
type Collected = (std::sync::Arc<std::sync::Mutex<Vec<Received>>>, std::sync::Arc<std::sync::Mutex<Vec<Point>>>);

fn attributes(list: &[opentelemetry_proto::tonic::common::v1::KeyValue]) -> Vec<(String, String)> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    list.iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Any::StringValue(s)) => s.clone(),
                Some(Any::IntValue(i)) => i.to_string(),
                Some(Any::BoolValue(b)) => b.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

/// An OTLP/HTTP receiver on loopback, decoding every export into the spans and histogram points
/// it holds.
async fn otlp_receiver() -> Result<(std::net::SocketAddr, Collected)> {
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    use prost::Message;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let spans = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let points = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (held, held_points) = (std::sync::Arc::clone(&spans), std::sync::Arc::clone(&points));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (held, held_points) = (std::sync::Arc::clone(&held), std::sync::Arc::clone(&held_points));
            tokio::spawn(async move {
                while let Some((head, body)) = read_request(&mut socket).await {
                    if head.starts_with("POST /v1/metrics")
                        && let Ok(export) = ExportMetricsServiceRequest::decode(body.as_slice())
                    {
                        let mut points = held_points.lock().expect("points");
                        for metric in export.resource_metrics.iter().flat_map(|r| &r.scope_metrics).flat_map(|s| &s.metrics) {
                            if let Some(Data::Histogram(histogram)) = &metric.data {
                                for point in &histogram.data_points {
                                    points.push((metric.name.clone(), attributes(&point.attributes), point.count));
                                }
                            }
                        }
                    }
                    if head.starts_with("POST /v1/traces")
                        && let Ok(export) = ExportTraceServiceRequest::decode(body.as_slice())
                    {
                        let mut held = held.lock().expect("spans");
                        for resource in &export.resource_spans {
                            let described = resource.resource.as_ref().map(|r| attributes(&r.attributes)).unwrap_or_default();
                            let service = described.into_iter().find(|(k, _)| k == "service.name").map(|(_, v)| v).unwrap_or_default();
                            for span in resource.scope_spans.iter().flat_map(|s| &s.spans) {
                                let attributes = attributes(&span.attributes);
                                held.push(Received {
                                    name: span.name.clone(),
                                    kind: span.kind,
                                    trace_id: hex(&span.trace_id),
                                    span_id: hex(&span.span_id),
                                    parent: hex(&span.parent_span_id),
                                    attributes,
                                    error: span.status.as_ref().is_some_and(|s| s.code == 2),
                                    service: service.clone(),
                                    head: head.clone(),
                                });
                            }
                        }
                    }
                    let reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if tokio::io::AsyncWriteExt::write_all(&mut socket, reply).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    Ok((addr, (spans, points)))
}

/// A loopback HTTP server that answers `hello` and keeps the head of every request it gets.
async fn upstream() -> Result<(std::net::SocketAddr, std::sync::Arc<std::sync::Mutex<Vec<String>>>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let held = std::sync::Arc::clone(&heads);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            if let Some((head, _)) = read_request(&mut socket).await {
                held.lock().expect("heads").push(head);
            }
            let _ = tokio::io::AsyncWriteExt::write_all(&mut socket, b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello").await;
        }
    });
    Ok((addr, heads))
}

#[tokio::test]
async fn one_trace_runs_from_the_client_through_the_server_span_and_the_plugin_into_the_upstream_request() -> Result<()> {
    let (collector, (spans, points)) = otlp_receiver().await?;
    let (upstream, heads) = upstream().await?;
    let dir = PluginDir::new()
        .add("fetch", &paddock_tests::sample_wasm("fetch"))
        .add("fixture", &fixture_wasm("fixture"))
        .write("fetch.toml", format!("network = [\"http://{upstream}\"]\n"));
    let endpoint = format!("http://{collector}");
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "100"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-collector-key=k123"),
    ];
    let host = HttpHost::start_with_env(dir.path(), &[], &env).await?;
    let client = reqwest::Client::new();

    // The client's context in `_meta`: the server span continues it.
    let (trace, client_span) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let mut params = json!({"name": "fetch_get", "arguments": {"url": format!("http://{upstream}/data")}});
    params["_meta"] = modern_meta(json!({}));
    params["_meta"]["traceparent"] = json!(format!("00-{trace}-{client_span}-01"));
    let fetched = post_traced(&client, &host, "tools/call", params, None).await?;
    assert_eq!(fetched.pointer("/result/isError"), None, "{fetched}");

    // The context in the HTTP headers, when `_meta` has none; a refused fetch is a tool error.
    let (header_trace, header_span) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let mut params = json!({"name": "fetch_get", "arguments": {"url": "http://127.0.0.1:9/"}});
    params["_meta"] = modern_meta(json!({}));
    let refused = post_traced(&client, &host, "tools/call", params, Some(&format!("00-{header_trace}-{header_span}-01"))).await?;
    assert_eq!(refused.pointer("/result/isError"), Some(&json!(true)), "{refused}");

    // The plugin is told the server span as its parent.
    let (seen_trace, seen_span) = ("11111111111111111111111111111111", "2222222222222222");
    let mut params = json!({"name": "fixture_context", "arguments": {}});
    params["_meta"] = modern_meta(json!({}));
    params["_meta"]["traceparent"] = json!(format!("00-{seen_trace}-{seen_span}-01"));
    let seen = post_traced(&client, &host, "tools/call", params, None).await?;
    let told: Value = serde_json::from_str(seen.pointer("/result/content/0/text").and_then(Value::as_str).context("context text")?)?;

    // A legacy session over Streamable HTTP: its span names the session, and the context comes
    // from the POST's headers.
    let legacy_trace = "33333333333333333333333333333333";
    let session_id = legacy_call(&client, &host, &format!("00-{legacy_trace}-4444444444444444-01")).await?;

    let spans = until(
        || async { Ok(spans.lock().expect("spans").clone()) },
        |spans: &Vec<Received>| {
            let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
            names.iter().filter(|n| **n == "tools/call fetch_get").count() >= 2
                && names.contains(&"GET")
                && names.contains(&"tools/call fixture_context")
                && names.contains(&"tools/call fixture_echo")
        },
    )
    .await?;
    let of = |trace_id: &str, name: &str| spans.iter().find(|s| s.trace_id == trace_id && s.name == name).cloned();
    let server = of(trace, "tools/call fetch_get").context("the server span")?;
    assert_eq!(server.kind, 2, "SERVER");
    assert_eq!(server.parent, client_span, "the server span continues the client's context");
    assert_eq!(server.attribute("mcp.method.name"), Some("tools/call"));
    assert_eq!(server.attribute("mcp.protocol.version"), Some("2026-07-28"));
    assert_eq!(server.attribute("gen_ai.tool.name"), Some("fetch_get"));
    assert_eq!(server.attribute("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(server.attribute("jsonrpc.request.id"), Some("7"));
    assert!(!server.error, "{server:?}");
    assert_eq!(server.service, "paddock", "the service is named paddock unless OTEL_SERVICE_NAME says otherwise");
    assert!(server.head.to_ascii_lowercase().contains("x-collector-key: k123"), "OTEL_EXPORTER_OTLP_HEADERS reach the collector: {}", server.head);
    let run = of(trace, "run fetch").context("the plugin's run span")?;
    assert_eq!(run.parent, server.span_id, "the run is a child of the server span");
    assert_eq!(run.attribute("paddock.plugin.id"), Some("fetch"));
    let instantiate = of(trace, "instantiate").context("the instantiation span")?;
    assert_eq!(instantiate.parent, run.span_id);
    let outgoing = of(trace, "GET").context("the outgoing request's span")?;
    assert_eq!(outgoing.kind, 3, "CLIENT");
    assert_eq!(outgoing.parent, run.span_id, "the outgoing request is a child of the run");
    assert_eq!(outgoing.attribute("http.response.status_code"), Some("200"));
    let head = heads.lock().expect("heads").first().cloned().context("the upstream got the request")?;
    let sent = head.lines().find_map(|l| l.strip_prefix("traceparent: ")).context("the upstream request carries a traceparent")?;
    assert_eq!(sent, format!("00-{trace}-{}-01", outgoing.span_id), "the upstream joins the same trace, under the outgoing span");

    let failed = of(header_trace, "tools/call fetch_get").context("the header-continued server span")?;
    assert_eq!(failed.parent, header_span, "without `_meta` context, the HTTP headers' is continued");
    assert_eq!(failed.attribute("error.type"), Some("tool_error"), "an isError result is marked tool_error");
    assert!(failed.error);

    let told_parent = told["traceparent"].as_str().context("the plugin was told a traceparent")?;
    let context_span = of(seen_trace, "tools/call fixture_context").context("the context call's span")?;
    assert_eq!(told_parent, format!("00-{seen_trace}-{}-01", context_span.span_id), "the plugin sees the server span as its parent");

    let legacy = of(legacy_trace, "tools/call fixture_echo").context("the legacy session's span")?;
    assert_eq!(legacy.attribute("mcp.session.id"), Some(session_id.as_str()));
    assert_eq!(legacy.attribute("mcp.protocol.version"), Some("2025-11-25"));
    assert_eq!(legacy.parent, "4444444444444444");

    // The conventions' duration metric, over OTLP too, with the tool error marked.
    let duration = |error: Option<&'static str>| {
        let points = points.lock().expect("points").clone();
        points
            .iter()
            .rev()
            .find(|(name, attributes, _)| {
                let has = |key: &str, value: &str| attributes.iter().any(|(k, v)| k == key && v == value);
                name == "mcp.server.operation.duration"
                    && has("gen_ai.tool.name", "fetch_get")
                    && error.map_or(!attributes.iter().any(|(k, _)| k == "error.type"), |e| has("error.type", e))
            })
            .map(|(_, _, count)| *count)
    };
    until(|| async { Ok((duration(None), duration(Some("tool_error")))) }, |counts| *counts == (Some(1), Some(1))).await?;

    // Log records made while serving name their trace and span.
    let refusal = host.wait_for_log("refused").await?;
    assert!(refusal.contains(header_trace), "the refusal's log record carries the trace id: {refusal}");
    Ok(())
}

/// A 2026-07-28 request (id 7) with `params` as given, `_meta` included, and a `traceparent`
/// header when given; the JSON-RPC response.
async fn post_traced(client: &reqwest::Client, host: &HttpHost, method: &str, params: Value, traceparent: Option<&str>) -> Result<Value> {
    let name = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str).context("name")?.to_owned();
    let mut post = client
        .post(host.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name);
    if let Some(traceparent) = traceparent {
        post = post.header("traceparent", traceparent);
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    Ok(post.body(body.to_string()).send().await?.json().await?)
}

#[tokio::test]
async fn without_an_exporter_the_clients_context_reaches_the_upstream_and_replaces_the_plugins_own() -> Result<()> {
    let (upstream, heads) = upstream().await?;
    let dir = PluginDir::new().add("fixture", &fixture_wasm("fixture")).write("fixture.toml", format!("network = [\"http://{upstream}\"]\n"));
    let host = HttpHost::start(dir.path(), &[]).await?;
    let client = reqwest::Client::new();
    let clients = "00-5bf92f3577b34da6a3ce929d0e0e4736-10f067aa0ba902b7-01";
    let forged = "00-99999999999999999999999999999999-8888888888888888-01";
    let get = |meta_parent: Option<&str>| {
        let mut params = json!({"name": "fixture_http_get", "arguments": {"url": format!("http://{upstream}/x"), "header": format!("traceparent: {forged}")}});
        params["_meta"] = modern_meta(json!({}));
        if let Some(parent) = meta_parent {
            params["_meta"]["traceparent"] = json!(parent);
        }
        params
    };
    let answered = post_traced(&client, &host, "tools/call", get(Some(clients)), None).await?;
    assert_eq!(answered.pointer("/result/isError"), None, "{answered}");
    let answered = post_traced(&client, &host, "tools/call", get(None), None).await?;
    assert_eq!(answered.pointer("/result/isError"), None, "{answered}");
    let malformed = post_traced(&client, &host, "tools/call", get(Some("00-not-a-context")), None).await?;
    assert_eq!(malformed.pointer("/result/isError"), None, "{malformed}");
    let heads = heads.lock().expect("heads").clone();
    let parents: Vec<Vec<&str>> = heads.iter().map(|h| h.lines().filter_map(|l| l.strip_prefix("traceparent: ")).collect()).collect();
    assert_eq!(parents[0], [clients], "the client's context replaces the one the plugin set");
    assert_eq!(parents[1], [forged], "a call without a context leaves the plugin's headers alone");
    assert_eq!(parents[2], [forged], "a malformed context is no context");
    Ok(())
}

#[tokio::test]
async fn an_unreachable_collector_holds_no_request_and_readyz_names_the_failure() -> Result<()> {
    // A collector that accepts connections and never answers, then one that refuses them.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let silent_addr = silent.local_addr()?;
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            kept.push(socket);
        }
    });
    let dir = PluginDir::new().add("fixture", &fixture_wasm("fixture"));
    for endpoint in [format!("http://{silent_addr}"), format!("http://127.0.0.1:{}", free_port())] {
        let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()), ("OTEL_BSP_SCHEDULE_DELAY", "20"), ("OTEL_EXPORTER_OTLP_TIMEOUT", "500")];
        let host = HttpHost::start_with_env(dir.path(), &[], &env).await?;
        let client = reqwest::Client::new();
        let started = std::time::Instant::now();
        for i in 0..300 {
            let answer = request(&client, &host, "tools/call", json!({"name": "fixture_echo", "arguments": {"text": i.to_string()}})).await?;
            assert_eq!(answer.pointer("/result/content/0/text"), Some(&json!(i.to_string())), "{answer}");
        }
        assert!(started.elapsed() < Duration::from_secs(20), "300 calls took {:?} with a dead collector", started.elapsed());
        let report = until(
            || async {
                let detail: Value = client.get(host.url("/readyz")).header("accept", "application/json").send().await?.json().await?;
                Ok(detail)
            },
            |detail: &Value| detail.pointer("/exporter/ok") == Some(&json!(false)),
        )
        .await?;
        assert!(report.pointer("/exporter/last_error").and_then(Value::as_str).is_some_and(|e| !e.is_empty()), "{report}");
        assert_eq!(report["status"], "ready", "{report}");
    }
    held.abort();
    Ok(())
}

#[tokio::test]
async fn metrics_are_served_beside_stdio_and_idle_scrapers_cannot_keep_them_from_others() -> Result<()> {
    let dir = PluginDir::new().add("fixture", &fixture_wasm("fixture"));
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let mut host = paddock_tests::StdioHost::start(dir.path(), &["--metrics", &address])?;
    host.initialize("2025-11-25").await?;
    host.call_tool("fixture_echo", json!({"text": "over stdio"})).await?;
    // Twice the listener's cap of connections that never send a byte.
    let mut idle = Vec::new();
    for _ in 0..32 {
        idle.push(tokio::net::TcpStream::connect(&address).await?);
    }
    let url = format!("http://{address}/metrics");
    let text = tokio::time::timeout(Duration::from_secs(30), scrape(&url)).await.context("a scrape behind idle connections")??;
    let calls = "paddock_requests_total{method=\"tools/call\",transport=\"stdio\",era=\"session\",outcome=\"ok\"}";
    assert_eq!(value(&text, calls), Some(1.0), "{text}");
    let answer = tokio::time::timeout(Duration::from_secs(5), host.call_tool("fixture_echo", json!({"text": "still served"}))).await??;
    assert_eq!(paddock_tests::first_text(&answer), "still served");
    drop(idle);
    Ok(())
}

/// Opens a legacy Streamable HTTP session and calls `fixture_echo` in it with `traceparent` as
/// an HTTP header; the session's id.
async fn legacy_call(client: &reqwest::Client, host: &HttpHost, traceparent: &str) -> Result<String> {
    let post = |body: Value, session: Option<&str>| {
        let mut request = client.post(host.url("/mcp")).header("accept", "application/json, text/event-stream").header("content-type", "application/json");
        if let Some(session) = session {
            request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25").header("traceparent", traceparent);
        }
        request.body(body.to_string()).send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "paddock-tests", "version": "0"}}});
    let opened = post(init, None).await?;
    let session = opened.headers().get("mcp-session-id").context("a session id")?.to_str()?.to_owned();
    paddock_tests::http::EventReader::new(opened).next_message().await?;
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), Some(&session)).await?;
    let called =
        post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "fixture_echo", "arguments": {"text": "hi"}}}), Some(&session))
            .await?;
    let reply = paddock_tests::http::EventReader::new(called).next_message().await?;
    assert_eq!(reply.pointer("/result/content/0/text"), Some(&json!("hi")), "{reply}");
    Ok(session)
}

#[tokio::test]
async fn a_collector_that_never_answers_delays_the_exit_by_at_most_the_flush_bound() -> Result<()> {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let endpoint = format!("http://{}", silent.local_addr()?);
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            kept.push(socket);
        }
    });
    let dir = PluginDir::new().add("fixture", &fixture_wasm("fixture"));
    let args = [std::ffi::OsStr::new("serve"), dir.path().as_os_str()];
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", std::ffi::OsStr::new(&endpoint)), ("OTEL_BSP_SCHEDULE_DELAY", std::ffi::OsStr::new("20"))];
    let mut host = paddock_tests::StdioHost::start_command(&args, &env)?;
    host.initialize("2025-11-25").await?;
    host.call_tool("fixture_echo", json!({"text": "traced"})).await?;
    let started = std::time::Instant::now();
    let code = host.close_within(Duration::from_secs(10)).await?;
    assert_eq!(code, 0);
    assert!(started.elapsed() < Duration::from_secs(5), "exit took {:?} with a silent collector (the flush bound is 2 s)", started.elapsed());
    held.abort();
    Ok(())
}
