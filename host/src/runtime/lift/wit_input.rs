//! The input model at the WIT boundary: a plugin's `input-required` into `input::InputRequired`
//! (bounded, validated, in MCP's wire shape), and the request context with the client's answers
//! into the WIT `request-context` a plugin reads.
//!
//! Input requests are guest output: a round names at least one request or a state; keys are
//! checked (1 to `MAX_INPUT_KEY` bytes without control characters, unique in the round, at most
//! `MAX_INPUT_REQUESTS` requests), JSON text passes `convert::json`, a URL elicitation's page must
//! be `https:` (or `http:` on a loopback host), and the plugin state is capped at
//! `MAX_PLUGIN_STATE`. A request that fails a check is `PluginError::MalformedOutput`. The round
//! is charged to the call's output budget at about its wire size (the state as base64); a round
//! past the budget is the `output` limit. Answers are client input: one that does not have its
//! method's shape is `PluginError::InvalidInputResponse`, naming the key and method, which the
//! session answers with `-32602`.

use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

use super::convert::{self, Budget, JsonKind};
use crate::input::{InputMethod, InputRequest, InputRequired, InputResponse, MAX_INPUT_KEY, MAX_INPUT_REQUESTS, MAX_PLUGIN_STATE, RequestContext, RequestEra};
use crate::plugin::PluginError;
use crate::runtime::bindings::paddock::plugin::{context as wx, input as wi, types as w};

/// What is wrong with a client's answer to an input request.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BadAnswer(String);

impl From<&str> for BadAnswer {
    fn from(why: &str) -> Self {
        BadAnswer(why.to_owned())
    }
}

impl From<String> for BadAnswer {
    fn from(why: String) -> Self {
        BadAnswer(why)
    }
}

/// JSON text inside an input request has no cap of its own beyond the call's output budget.
const ANY_SIZE: usize = usize::MAX;

/// Converts a plugin's `input-required`, charging its wire size to `budget`.
pub(crate) fn input_required(r: wi::InputRequired, budget: &mut Budget) -> Result<InputRequired, PluginError> {
    let malformed = |why: String| PluginError::MalformedOutput(why);
    if r.requests.is_empty() && r.state.is_none() {
        return Err(malformed("input-required names no input request and no state".into()));
    }
    if r.requests.len() > MAX_INPUT_REQUESTS {
        return Err(malformed(format!("input-required has {} requests; at most {MAX_INPUT_REQUESTS} are allowed", r.requests.len())));
    }
    if let Some(state) = &r.state {
        if state.len() > MAX_PLUGIN_STATE {
            return Err(malformed(format!("input state is {} bytes; at most {MAX_PLUGIN_STATE} are allowed", state.len())));
        }
        budget.spend(state.len().div_ceil(3) * 4)?;
    }
    let mut keys = HashSet::new();
    let mut requests = Vec::with_capacity(r.requests.len());
    for request in r.requests {
        let key = request.key;
        if key.is_empty() || key.len() > MAX_INPUT_KEY || key.chars().any(char::is_control) {
            return Err(malformed(format!(
                "input key `{}` must be 1 to {MAX_INPUT_KEY} bytes without control characters",
                crate::runtime::text::truncate(key, 64)
            )));
        }
        if !keys.insert(key.clone()) {
            return Err(malformed(format!("input key `{key}` is used twice in one round")));
        }
        budget.spend(key.len() + 3)?;
        let (method, params) = request_params(request.request, budget).map_err(|e| match e {
            PluginError::MalformedOutput(why) => malformed(format!("input request `{key}`: {why}")),
            other => other,
        })?;
        budget.spend(serde_json::to_string(&params).map_or(0, |s| s.len()) + method.method().len() + 30)?;
        requests.push(InputRequest { key, method, params });
    }
    Ok(InputRequired { requests, state: r.state, in_task: r.in_task })
}

fn request_params(kind: wi::InputRequestKind, budget: &mut Budget) -> Result<(InputMethod, Map<String, Value>), PluginError> {
    let mut params = Map::new();
    let method = match kind {
        wi::InputRequestKind::ElicitForm(form) => {
            let schema = convert::json(form.requested_schema, JsonKind::Object, "requested schema", ANY_SIZE, budget)?;
            params.insert("message".into(), json!(form.message));
            params.insert("requestedSchema".into(), raw(&schema)?);
            InputMethod::ElicitForm
        }
        wi::InputRequestKind::ElicitUrl(page) => {
            check_page_url(&page.url)
                .map_err(|why| PluginError::MalformedOutput(format!("{why}: `{}`", crate::runtime::text::truncate(page.url.clone(), 64))))?;
            params.insert("mode".into(), json!("url"));
            params.insert("message".into(), json!(page.message));
            params.insert("url".into(), json!(page.url));
            InputMethod::ElicitUrl
        }
        wi::InputRequestKind::Sample(s) => {
            let mut messages = Vec::with_capacity(s.messages.len());
            for m in s.messages {
                let mut message = Map::new();
                message.insert("role".into(), json!(role(m.role)));
                let mut blocks = m.content.into_iter().map(|c| sampling_content(c, budget)).collect::<Result<Vec<_>, _>>()?;
                // One block travels as itself, which every revision reads; several as a list (2025-11-25 on).
                let content = if blocks.len() == 1 { blocks.remove(0) } else { Value::Array(blocks) };
                message.insert("content".into(), content);
                if let Some(meta) = m.meta {
                    message.insert("_meta".into(), object_text(meta, "message `_meta`", budget)?);
                }
                messages.push(Value::Object(message));
            }
            params.insert("messages".into(), Value::Array(messages));
            params.insert("maxTokens".into(), json!(s.max_tokens));
            if let Some(prompt) = s.system_prompt {
                params.insert("systemPrompt".into(), json!(prompt));
            }
            if let Some(t) = s.temperature.filter(|t| t.is_finite()) {
                params.insert("temperature".into(), json!(t));
            }
            if !s.stop_sequences.is_empty() {
                params.insert("stopSequences".into(), json!(s.stop_sequences));
            }
            if let Some(p) = s.model_preferences {
                let mut prefs = Map::new();
                if !p.hints.is_empty() {
                    let hints: Vec<Value> = p.hints.into_iter().map(|h| h.name.map_or_else(|| json!({}), |n| json!({"name": n}))).collect();
                    prefs.insert("hints".into(), Value::Array(hints));
                }
                for (key, value) in [("costPriority", p.cost_priority), ("speedPriority", p.speed_priority), ("intelligencePriority", p.intelligence_priority)]
                {
                    if let Some(v) = value.filter(|v| v.is_finite()) {
                        prefs.insert(key.into(), json!(v.clamp(0.0, 1.0)));
                    }
                }
                params.insert("modelPreferences".into(), Value::Object(prefs));
            }
            let context = match s.include_context {
                None | Some(wi::IncludeContext::None) => false,
                Some(other) => {
                    let name = if other == wi::IncludeContext::ThisServer { "thisServer" } else { "allServers" };
                    params.insert("includeContext".into(), json!(name));
                    true
                }
            };
            if let Some(metadata) = s.metadata {
                params.insert("metadata".into(), object_text(metadata, "sampling metadata", budget)?);
            }
            let tools = s.tools.is_some() || s.tool_choice.is_some();
            if let Some(t) = s.tools {
                let t = convert::json(t, JsonKind::Any, "sampling tools", ANY_SIZE, budget)?;
                let t = raw(&t)?;
                if !t.is_array() {
                    return Err(PluginError::MalformedOutput("sampling tools must be a JSON array of tools".into()));
                }
                params.insert("tools".into(), t);
            }
            if let Some(choice) = s.tool_choice {
                let mode = match choice {
                    wi::ToolChoice::Auto => "auto",
                    wi::ToolChoice::Required => "required",
                    wi::ToolChoice::None => "none",
                };
                params.insert("toolChoice".into(), json!({"mode": mode}));
            }
            InputMethod::Sample { tools, context }
        }
        wi::InputRequestKind::ListRoots => InputMethod::ListRoots,
    };
    Ok((method, params))
}

/// The page a URL elicitation sends the user to: an absolute `https:` URL, or `http:` on a
/// loopback host (`localhost`, 127.0.0.0/8, `[::1]`), with a host and no credentials, in
/// printable ASCII without backslashes (which parsers read differently). Anything else
/// (`javascript:`, `file:`, `data:`, a relative or malformed URL) is refused: the client shows
/// this link to a person.
fn check_page_url(url: &str) -> Result<(), &'static str> {
    const NO_HOST: &str = "the URL has no valid host and port";
    if url.is_empty() || !url.bytes().all(|b| b.is_ascii_graphic() && b != b'\\') {
        return Err("the URL must be printable ASCII without spaces or backslashes");
    }
    let (scheme, rest) = url.split_once("://").ok_or("the URL must be absolute and `https:` (or `http:` on a loopback host)")?;
    let https = scheme.eq_ignore_ascii_case("https");
    if !https && !scheme.eq_ignore_ascii_case("http") {
        return Err("the URL must be absolute and `https:` (or `http:` on a loopback host)");
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    if authority.contains('@') {
        return Err("the URL must not carry credentials");
    }
    let (host, port) = if authority.starts_with('[') {
        let (host, after) = authority.split_at(authority.find(']').ok_or(NO_HOST)? + 1);
        (host, if after.is_empty() { after } else { after.strip_prefix(':').ok_or(NO_HOST)? })
    } else {
        authority.split_once(':').unwrap_or((authority, ""))
    };
    if !(port.is_empty() || (port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok())) {
        return Err(NO_HOST);
    }
    let loopback = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(literal) => literal.parse::<Ipv6Addr>().map_err(|_| NO_HOST)? == Ipv6Addr::LOCALHOST,
        None => {
            if host.is_empty() || !host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%".contains(&b)) {
                return Err(NO_HOST);
            }
            host.eq_ignore_ascii_case("localhost") || host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
        }
    };
    if !https && !loopback {
        return Err("an `http:` URL must name a loopback host (`localhost`, 127.0.0.0/8, `[::1]`); use `https:`");
    }
    Ok(())
}

fn role(role: w::Role) -> &'static str {
    match role {
        w::Role::User => "user",
        w::Role::Assistant => "assistant",
    }
}

/// Validated JSON object text as a `Value`.
fn object_text(text: String, what: &str, budget: &mut Budget) -> Result<Value, PluginError> {
    let json = convert::json(text, JsonKind::Object, what, ANY_SIZE, budget)?;
    raw(&json)
}

fn raw(json: &crate::protocol::Json) -> Result<Value, PluginError> {
    serde_json::from_str(json.get()).map_err(|e| PluginError::MalformedOutput(format!("JSON: {e}")))
}

fn sampling_content(c: wi::SamplingContent, budget: &mut Budget) -> Result<Value, PluginError> {
    // Content blocks are converted with a scratch budget: the whole request is charged at its
    // wire size once it is built.
    let mut scratch = Budget::new(u64::MAX);
    let block = |b: w::ContentBlock, scratch: &mut Budget| -> Result<Value, PluginError> {
        let block = convert::content_block(b, scratch)?;
        serde_json::to_value(block).map_err(|e| PluginError::MalformedOutput(e.to_string()))
    };
    Ok(match c {
        wi::SamplingContent::Text(t) => block(w::ContentBlock::Text(t), &mut scratch)?,
        wi::SamplingContent::Image(m) => block(w::ContentBlock::Image(m), &mut scratch)?,
        wi::SamplingContent::Audio(m) => block(w::ContentBlock::Audio(m), &mut scratch)?,
        wi::SamplingContent::ToolUse(u) => {
            let mut v = json!({"type": "tool_use", "id": u.id, "name": u.name});
            v["input"] = object_text(u.input, "tool use input", budget)?;
            if let Some(meta) = u.meta {
                v["_meta"] = object_text(meta, "tool use `_meta`", budget)?;
            }
            v
        }
        wi::SamplingContent::ToolResult(r) => {
            let content = r.content.into_iter().map(|b| block(b, &mut scratch)).collect::<Result<Vec<_>, _>>()?;
            let mut v = json!({"type": "tool_result", "toolUseId": r.tool_use_id, "content": content});
            if let Some(sc) = r.structured_content {
                let sc = convert::json(sc, JsonKind::Any, "tool result structured content", ANY_SIZE, budget)?;
                v["structuredContent"] = raw(&sc)?;
            }
            if let Some(e) = r.is_error {
                v["isError"] = json!(e);
            }
            if let Some(meta) = r.meta {
                v["_meta"] = object_text(meta, "tool result `_meta`", budget)?;
            }
            v
        }
    })
}

/// The WIT request context for `request`: the client's answers are parsed into WIT values here.
pub(crate) fn request_context(request: &RequestContext) -> Result<wx::RequestContext, PluginError> {
    let input_responses = request
        .input_responses
        .iter()
        .map(|r| {
            let response = response(r)
                .map_err(|why| PluginError::InvalidInputResponse(format!("input response `{}` is not a valid {} result: {why}", r.key, r.method.method())))?;
            Ok(wi::InputResponse { key: r.key.clone(), response })
        })
        .collect::<Result<Vec<_>, PluginError>>()?;
    Ok(wx::RequestContext {
        protocol_version: request.protocol_version.as_str().to_owned(),
        era: match request.era() {
            RequestEra::Session => wx::Era::Session,
            RequestEra::Stateless => wx::Era::Stateless,
        },
        // Serialized where they are: a map of JSON values always serializes.
        client_capabilities: map_text(&request.client_capabilities),
        client_info: request.client_info.as_ref().map(|c| wx::ClientInfo { name: c.name.clone(), version: c.version.clone(), title: c.title.clone() }),
        meta: map_text(&request.meta),
        has_progress_token: request.has_progress_token,
        trace: wx::TraceContext {
            traceparent: request.trace.traceparent.clone(),
            tracestate: request.trace.tracestate.clone(),
            baggage: request.trace.baggage.clone(),
        },
        caller: request.caller.clone(),
        input_responses,
        state: request.state.clone(),
    })
}

/// A JSON object's text, written from the map itself (no copy of it as a `Value`).
fn map_text(object: &serde_json::Map<String, Value>) -> String {
    serde_json::to_string(object).unwrap_or_else(|_| "{}".to_owned())
}

fn response(r: &InputResponse) -> Result<wi::InputResponseKind, BadAnswer> {
    let object = r.result.as_object().ok_or("it is not an object")?;
    match r.method {
        InputMethod::ElicitForm | InputMethod::ElicitUrl => {
            let action = match object.get("action").and_then(Value::as_str) {
                Some("accept") => wi::ElicitationAction::Accept,
                Some("decline") => wi::ElicitationAction::Decline,
                Some("cancel") => wi::ElicitationAction::Cancel,
                _ => return Err("`action` must be `accept`, `decline` or `cancel`".into()),
            };
            let content = match object.get("content") {
                None | Some(Value::Null) => None,
                Some(Value::Object(c)) => Some(Value::Object(c.clone()).to_string()),
                Some(_) => return Err("`content` must be an object".into()),
            };
            Ok(wi::InputResponseKind::Elicitation(wi::ElicitationResult { action, content }))
        }
        InputMethod::Sample { .. } => {
            let role = parse_role(object.get("role"))?;
            let content = match object.get("content") {
                Some(Value::Array(blocks)) => blocks.iter().map(parse_sampling_content).collect::<Result<Vec<_>, _>>()?,
                Some(block @ Value::Object(_)) => vec![parse_sampling_content(block)?],
                _ => return Err("`content` must be a content block or a list of them".into()),
            };
            let model = object.get("model").and_then(Value::as_str).ok_or("`model` must be a string")?.to_owned();
            let stop_reason = object.get("stopReason").and_then(Value::as_str).map(str::to_owned);
            Ok(wi::InputResponseKind::Sampling(wi::SamplingResult { role, content, model, stop_reason, meta: meta_text(object)? }))
        }
        InputMethod::ListRoots => {
            let roots = object.get("roots").and_then(Value::as_array).ok_or("`roots` must be a list")?;
            let roots = roots
                .iter()
                .map(|root| {
                    let root = root.as_object().ok_or("a root must be an object")?;
                    Ok(wi::Root {
                        uri: root.get("uri").and_then(Value::as_str).ok_or("a root needs a `uri`")?.to_owned(),
                        name: root.get("name").and_then(Value::as_str).map(str::to_owned),
                        meta: meta_text(root)?,
                    })
                })
                .collect::<Result<Vec<_>, BadAnswer>>()?;
            Ok(wi::InputResponseKind::Roots(roots))
        }
    }
}

fn parse_role(value: Option<&Value>) -> Result<w::Role, BadAnswer> {
    match value.and_then(Value::as_str) {
        Some("user") => Ok(w::Role::User),
        Some("assistant") => Ok(w::Role::Assistant),
        _ => Err("`role` must be `user` or `assistant`".into()),
    }
}

fn meta_text(object: &Map<String, Value>) -> Result<Option<String>, BadAnswer> {
    match object.get("_meta") {
        None | Some(Value::Null) => Ok(None),
        Some(meta @ Value::Object(_)) => Ok(Some(meta.to_string())),
        Some(_) => Err("`_meta` must be an object".into()),
    }
}

fn text_field(object: &Map<String, Value>, key: &str) -> Result<String, BadAnswer> {
    object.get(key).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| format!("`{key}` must be a string").into())
}

fn base64_field(object: &Map<String, Value>, key: &str) -> Result<Vec<u8>, BadAnswer> {
    BASE64.decode(text_field(object, key)?).map_err(|_| format!("`{key}` must be base64").into())
}

fn annotations(object: &Map<String, Value>) -> Result<Option<w::Annotations>, BadAnswer> {
    let Some(a) = object.get("annotations").and_then(Value::as_object) else { return Ok(None) };
    let audience = match a.get("audience") {
        Some(Value::Array(roles)) => roles.iter().map(|r| parse_role(Some(r))).collect::<Result<_, _>>()?,
        _ => Vec::new(),
    };
    Ok(Some(w::Annotations {
        audience,
        priority: a.get("priority").and_then(Value::as_f64),
        last_modified: a.get("lastModified").and_then(Value::as_str).map(str::to_owned),
    }))
}

fn parse_sampling_content(value: &Value) -> Result<wi::SamplingContent, BadAnswer> {
    let object = value.as_object().ok_or("a content block must be an object")?;
    Ok(match object.get("type").and_then(Value::as_str) {
        Some("tool_use") => wi::SamplingContent::ToolUse(wi::ToolUse {
            id: text_field(object, "id")?,
            name: text_field(object, "name")?,
            input: match object.get("input") {
                Some(input @ Value::Object(_)) => input.to_string(),
                _ => return Err("`input` of a tool use must be an object".into()),
            },
            meta: meta_text(object)?,
        }),
        Some("tool_result") => wi::SamplingContent::ToolResult(wi::ToolResult {
            tool_use_id: text_field(object, "toolUseId")?,
            content: match object.get("content") {
                Some(Value::Array(blocks)) => blocks.iter().map(parse_content_block).collect::<Result<_, _>>()?,
                _ => Vec::new(),
            },
            structured_content: object.get("structuredContent").filter(|v| !v.is_null()).map(Value::to_string),
            is_error: object.get("isError").and_then(Value::as_bool),
            meta: meta_text(object)?,
        }),
        _ => match parse_content_block(value)? {
            w::ContentBlock::Text(t) => wi::SamplingContent::Text(t),
            w::ContentBlock::Image(m) => wi::SamplingContent::Image(m),
            w::ContentBlock::Audio(m) => wi::SamplingContent::Audio(m),
            _ => return Err("sampling content must be text, image, audio, tool_use or tool_result".into()),
        },
    })
}

fn parse_content_block(value: &Value) -> Result<w::ContentBlock, BadAnswer> {
    let object = value.as_object().ok_or("a content block must be an object")?;
    let media = |object: &Map<String, Value>| -> Result<w::MediaContent, BadAnswer> {
        Ok(w::MediaContent {
            data: base64_field(object, "data")?,
            mime_type: text_field(object, "mimeType")?,
            annotations: annotations(object)?,
            meta: meta_text(object)?,
        })
    };
    Ok(match object.get("type").and_then(Value::as_str) {
        Some("text") => {
            w::ContentBlock::Text(w::TextContent { text: text_field(object, "text")?, annotations: annotations(object)?, meta: meta_text(object)? })
        }
        Some("image") => w::ContentBlock::Image(media(object)?),
        Some("audio") => w::ContentBlock::Audio(media(object)?),
        Some("resource_link") => w::ContentBlock::ResourceLink(w::ResourceLink {
            uri: text_field(object, "uri")?,
            name: text_field(object, "name")?,
            title: object.get("title").and_then(Value::as_str).map(str::to_owned),
            description: object.get("description").and_then(Value::as_str).map(str::to_owned),
            mime_type: object.get("mimeType").and_then(Value::as_str).map(str::to_owned),
            size: object.get("size").and_then(Value::as_u64),
            icons: Vec::new(),
            annotations: annotations(object)?,
            meta: meta_text(object)?,
        }),
        Some("resource") => {
            let r = object.get("resource").and_then(Value::as_object).ok_or("`resource` must be an object")?;
            let body = match (r.get("text").and_then(Value::as_str), r.get("blob")) {
                (Some(text), _) => w::ResourceBody::Text(text.to_owned()),
                (None, Some(_)) => w::ResourceBody::Blob(base64_field(r, "blob")?),
                (None, None) => return Err("an embedded resource needs `text` or `blob`".into()),
            };
            w::ContentBlock::Resource(w::EmbeddedResource {
                resource: w::ResourceContents {
                    uri: text_field(r, "uri")?,
                    mime_type: r.get("mimeType").and_then(Value::as_str).map(str::to_owned),
                    body,
                    meta: meta_text(r)?,
                },
                annotations: annotations(object)?,
                meta: meta_text(object)?,
            })
        }
        _ => return Err("unknown content block type".into()),
    })
}

#[cfg(test)]
mod tests;
