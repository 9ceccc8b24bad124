//! `paddock call`: one request without an MCP client, against a plugins folder (loaded in this
//! process) or a running server's URL (as a 2026-07-28 client): a tool call, a resource read, a
//! prompt get or a completion. When the plugin asks for input, the answers come from
//! `--answer KEY=VALUE` or, on a terminal, from the person at it; the request is then made again
//! with them, as a client would.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use crate::input::{InputMethod, InputRequest, Outcome};

/// At most this many rounds of questions before `call` gives up.
const MAX_ROUNDS: usize = 10;

/// What is asked.
#[derive(Debug, Clone)]
pub(super) enum Ask {
    Tool {
        name: String,
        arguments: Map<String, Value>,
    },
    Read {
        uri: String,
    },
    Prompt {
        name: String,
        arguments: Map<String, Value>,
    },
    /// `target` is `prompt:NAME` or `resource:URI-TEMPLATE`.
    Complete {
        target: String,
        argument: String,
        value: String,
    },
}

impl Ask {
    /// The JSON-RPC method and params of this request (2026-07-28 wire shape, without `_meta`).
    fn wire(&self) -> Result<(&'static str, Map<String, Value>)> {
        Ok(match self {
            Ask::Tool { name, arguments } => ("tools/call", object(json!({"name": name, "arguments": arguments}))),
            Ask::Read { uri } => ("resources/read", object(json!({"uri": uri}))),
            Ask::Prompt { name, arguments } => ("prompts/get", object(json!({"name": name, "arguments": arguments}))),
            Ask::Complete { target, argument, value } => {
                let reference = match completion_target(target)? {
                    crate::protocol::CompletionTarget::Prompt(name) => json!({"type": "ref/prompt", "name": name}),
                    crate::protocol::CompletionTarget::ResourceTemplate(uri) => json!({"type": "ref/resource", "uri": uri}),
                };
                ("completion/complete", object(json!({"ref": reference, "argument": {"name": argument, "value": value}})))
            }
        })
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn completion_target(target: &str) -> Result<crate::protocol::CompletionTarget> {
    match target.split_once(':') {
        Some(("prompt", name)) => Ok(crate::protocol::CompletionTarget::Prompt(name.to_owned())),
        Some(("resource", uri)) => Ok(crate::protocol::CompletionTarget::ResourceTemplate(uri.to_owned())),
        _ => bail!("--complete takes `prompt:NAME` or `resource:URI-TEMPLATE`, not `{target}`"),
    }
}

/// The answers given with `--answer KEY=VALUE`, by key.
pub(super) fn parse_answers(answers: &[String]) -> Result<BTreeMap<String, String>> {
    answers.iter().map(|a| a.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())).with_context(|| format!("--answer `{a}` is not KEY=VALUE"))).collect()
}

/// A question's answer, as the method's result in MCP's wire shape, from what the person wrote:
/// for a form, the JSON object of its fields (or `decline`, `cancel`); for a page to visit,
/// `accept`, `decline` or `cancel`; for the client's model, the text it answers (or a whole
/// `CreateMessageResult` object); for roots, a JSON array of URIs (or of `Root` objects).
fn answer_result(request: &InputRequest, written: &str) -> Result<Value> {
    let written = written.trim();
    let action = |word: &str| matches!(word, "accept" | "decline" | "cancel");
    Ok(match request.method {
        InputMethod::ElicitForm if action(written) && written != "accept" => json!({"action": written}),
        InputMethod::ElicitForm => {
            let content: Value =
                serde_json::from_str(written).with_context(|| format!("the answer to `{}` is not a JSON object of the form's fields", request.key))?;
            if !content.is_object() {
                bail!("the answer to `{}` must be a JSON object of the form's fields, or `decline` or `cancel`", request.key);
            }
            json!({"action": "accept", "content": content})
        }
        InputMethod::ElicitUrl if action(written) => json!({"action": written}),
        InputMethod::ElicitUrl => bail!("the answer to `{}` (a page to visit) is `accept`, `decline` or `cancel`", request.key),
        InputMethod::Sample { .. } => match serde_json::from_str::<Value>(written) {
            Ok(whole @ Value::Object(_)) => whole,
            _ => json!({"role": "assistant", "content": {"type": "text", "text": written}, "model": "paddock-call", "stopReason": "endTurn"}),
        },
        InputMethod::ListRoots => {
            let roots: Value = serde_json::from_str(written).with_context(|| format!("the answer to `{}` is a JSON array of root URIs", request.key))?;
            let Value::Array(roots) = roots else { bail!("the answer to `{}` is a JSON array of root URIs", request.key) };
            let roots: Vec<Value> = roots.into_iter().map(|r| if r.is_string() { json!({"uri": r}) } else { r }).collect();
            json!({"roots": roots})
        }
    })
}

/// What the question says, for the person answering it.
fn describe(request: &InputRequest) -> String {
    let params = &request.params;
    let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    match request.method {
        InputMethod::ElicitForm => {
            format!("{} (a JSON object of: {})", text("message"), params.get("requestedSchema").map(Value::to_string).unwrap_or_default())
        }
        InputMethod::ElicitUrl => format!("{} (visit {}; answer accept, decline or cancel)", text("message"), text("url")),
        InputMethod::Sample { .. } => format!("the model is asked: {}", params.get("messages").map(Value::to_string).unwrap_or_default()),
        InputMethod::ListRoots => "the roots (a JSON array of URIs)".to_owned(),
    }
}

/// Answers every question, from `given` or, on a terminal, from the person; an unanswered
/// question without a terminal is an error naming how to answer it.
fn answer_all(requests: &[InputRequest], given: &BTreeMap<String, String>) -> Result<Vec<(InputRequest, Value)>> {
    let interactive = std::io::stdin().is_terminal();
    let mut answered = Vec::new();
    for request in requests {
        let written = match given.get(&request.key) {
            Some(written) => written.clone(),
            None if interactive => {
                eprint!("{} asks `{}`: {}\n> ", request.method.method(), request.key, describe(request));
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).context("cannot read the answer")?;
                line
            }
            None => bail!("the plugin asks `{}` ({}: {}); answer with --answer {}=VALUE", request.key, request.method.method(), describe(request), request.key),
        };
        answered.push((request.clone(), answer_result(request, &written)?));
    }
    Ok(answered)
}

/// The capabilities `call` declares: it can answer every kind of question.
fn capabilities() -> Map<String, Value> {
    object(json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}))
}

/// Prints a result; 1 for a tool's error result.
fn finish(result: &Value) -> Result<ExitCode> {
    println!("{}", serde_json::to_string_pretty(result).context("cannot print the result")?);
    Ok(if result.get("isError") == Some(&Value::Bool(true)) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Calls into a folder loaded in this process.
pub(super) async fn in_folder(router: &crate::router::Router, folder: &Path, ask: &Ask, given: &BTreeMap<String, String>) -> Result<ExitCode> {
    use crate::router::RouteError;
    let mut context = crate::input::RequestContext::local(crate::revision::Revision::LATEST_SESSION);
    context.client_capabilities = capabilities();
    for _ in 0..MAX_ROUNDS {
        let cx = crate::plugin::CallContext::detached("cli").with_request(context.clone());
        let outcome = match ask {
            Ask::Tool { name, arguments } => router.call_tool(name, &Value::Object(arguments.clone()).to_string(), &cx).await.map(|(_, o)| o.map(to_value)),
            Ask::Read { uri } => router.read_resource(uri, &cx).await.map(|(_, o)| o.map(to_value)),
            Ask::Prompt { name, arguments } => {
                let arguments: Vec<(String, String)> =
                    arguments.iter().map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned))).collect();
                router.get_prompt(name, &arguments, &cx).await.map(|(_, o)| o.map(to_value))
            }
            Ask::Complete { target, argument, value } => {
                let target = completion_target(target)?;
                router.complete(&target, (argument, value), Vec::new(), &cx).await.map(|c| Outcome::Complete(json!({"completion": to_value(c)})))
            }
        };
        match outcome {
            Ok(Outcome::Complete(result)) => return finish(&result),
            Ok(Outcome::InputRequired(required)) => {
                let answered = answer_all(&required.requests, given)?;
                context.input_responses =
                    answered.into_iter().map(|(r, result)| crate::input::InputResponse { key: r.key, method: r.method, result }).collect();
                context.state = required.state;
            }
            Err(RouteError::UnknownName { kind, name }) => {
                let known = known(router, ask);
                bail!("no {kind} `{name}` in {} ({}: {})", folder.display(), known.0, if known.1.is_empty() { "none".to_owned() } else { known.1.join(", ") })
            }
            Err(RouteError::Plugin { plugin, error }) => {
                let result = crate::protocol::CallToolResult::error(format!("plugin `{plugin}`: {error}"));
                println!("{}", serde_json::to_string_pretty(&result).context("cannot print the result")?);
                return Ok(ExitCode::from(1));
            }
            Err(other) => bail!("{other}"),
        }
    }
    bail!("the plugin asked for input {MAX_ROUNDS} times over; giving up")
}

fn to_value<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// What the folder serves of the kind asked, to name in an error.
fn known(router: &crate::router::Router, ask: &Ask) -> (&'static str, Vec<String>) {
    match ask {
        Ask::Prompt { .. } | Ask::Complete { .. } => ("prompts", router.prompts().iter().map(|p| p.name.clone()).collect()),
        Ask::Read { .. } => ("resources", router.resources().iter().map(|r| r.uri.clone()).collect()),
        Ask::Tool { .. } => ("tools", router.tools().iter().map(|t| t.name.clone()).collect()),
    }
}

/// Calls a running server at `url` (its base URL or its `/mcp` endpoint) as a 2026-07-28
/// client, with `token` as its bearer token when given.
pub(super) async fn at_url(url: &str, token: Option<&str>, ask: &Ask, given: &BTreeMap<String, String>) -> Result<ExitCode> {
    let endpoint =
        if url.trim_end_matches('/').ends_with("/mcp") { url.trim_end_matches('/').to_owned() } else { format!("{}/mcp", url.trim_end_matches('/')) };
    let uri: http::Uri = endpoint.parse().with_context(|| format!("`{url}` is not a URL"))?;
    if uri.scheme_str() != Some("http") {
        bail!("`{url}`: `paddock call` reaches servers over http:// (put a TLS-terminating proxy's inner address, or call from the server's machine)");
    }
    let (method, mut params) = ask.wire()?;
    let name = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str).map(str::to_owned);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities(),
        "io.modelcontextprotocol/clientInfo": {"name": "paddock-call", "version": env!("CARGO_PKG_VERSION")},
    });
    params.insert("_meta".into(), meta);
    for round in 0..MAX_ROUNDS {
        let body = json!({"jsonrpc": "2.0", "id": round + 1, "method": method, "params": params});
        let reply = post(&uri, token, method, name.as_deref(), &body).await?;
        if let Some(error) = reply.get("error") {
            bail!("the server refused the request: {}", error);
        }
        let result = reply.get("result").cloned().context("the server's reply has neither a result nor an error")?;
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return finish(&result);
        }
        let requests: Vec<InputRequest> = result
            .get("inputRequests")
            .and_then(Value::as_object)
            .map(|asked| asked.iter().filter_map(|(key, request)| wire_request(key, request)).collect())
            .unwrap_or_default();
        let answered = answer_all(&requests, given)?;
        let responses: Map<String, Value> = answered.into_iter().map(|(r, result)| (r.key, result)).collect();
        params.insert("inputResponses".into(), Value::Object(responses));
        match result.get("requestState") {
            Some(state) => params.insert("requestState".into(), state.clone()),
            None => params.remove("requestState"),
        };
    }
    bail!("the server asked for input {MAX_ROUNDS} times over; giving up")
}

/// A question as a 2026-07-28 server lists it under `inputRequests`.
fn wire_request(key: &str, request: &Value) -> Option<InputRequest> {
    let params = request.get("params").and_then(Value::as_object).cloned().unwrap_or_default();
    let method = match request.get("method").and_then(Value::as_str)? {
        "elicitation/create" if params.get("mode").and_then(Value::as_str) == Some("url") => InputMethod::ElicitUrl,
        "elicitation/create" => InputMethod::ElicitForm,
        "sampling/createMessage" => InputMethod::Sample { tools: false, context: false },
        "roots/list" => InputMethod::ListRoots,
        _ => return None,
    };
    Some(InputRequest { key: key.to_owned(), method, params })
}

/// One POST of a 2026-07-28 request; the JSON reply (from a JSON body or the last event of an
/// event stream).
async fn post(uri: &http::Uri, token: Option<&str>, method: &str, name: Option<&str>, body: &Value) -> Result<Value> {
    use http_body_util::BodyExt as _;
    let authority = uri.authority().context("the URL has no host")?.clone();
    let stream = tokio::net::TcpStream::connect(authority.as_str()).await.with_context(|| format!("cannot connect to {authority}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.context("HTTP handshake")?;
    tokio::spawn(connection);
    let mut request = http::Request::post(uri.clone())
        .header(http::header::HOST, authority.as_str())
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    if let Some(token) = token {
        request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request.body(http_body_util::Full::new(bytes::Bytes::from(body.to_string()))).context("the request")?;
    let response = tokio::time::timeout(std::time::Duration::from_secs(300), sender.send_request(request)).await.context("no answer in 5 minutes")??;
    let status = response.status();
    let is_stream = response.headers().get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|t| t.starts_with("text/event-stream"));
    let bytes = response.into_body().collect().await.context("reading the answer")?.to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    let json_text = if is_stream {
        // The reply is the last `data:` event (progress and logs come before it).
        text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).rfind(|d| d.contains("\"id\"")).unwrap_or_default().to_owned()
    } else {
        text.into_owned()
    };
    serde_json::from_str(&json_text).with_context(|| format!("the server answered {status} with no JSON-RPC reply: {}", crate::escape::shorten(&json_text)))
}
