//! MCP requests, typed: `Method` names a request (read once from the method string, before
//! anything else is decided), and `Request` is the request with its params parsed, once, for
//! the era it is served in. Handlers match on these; no method string is compared after here.

use serde_json::{Map, Value, json};

use super::Era;
use super::error::McpError;
use crate::jsonrpc::shortened;
use crate::plugin::LogLevel;
use crate::protocol::CompletionTarget;

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    Initialize,
    Ping,
    Discover,
    List(ListMethod),
    CallTool,
    GetPrompt,
    ReadResource,
    Complete,
    Subscribe,
    Unsubscribe,
    SetLogLevel,
    TasksGet,
    TasksList,
    TasksCancel,
    TasksUpdate,
    TasksResult,
    Listen,
    /// A method this server does not have, by the name the client sent.
    Other(String),
}

impl Method {
    /// The method a request names.
    pub fn parse(name: &str) -> Method {
        match name {
            "initialize" => Method::Initialize,
            "ping" => Method::Ping,
            "server/discover" => Method::Discover,
            "tools/list" => Method::List(ListMethod::Tools),
            "prompts/list" => Method::List(ListMethod::Prompts),
            "resources/list" => Method::List(ListMethod::Resources),
            "resources/templates/list" => Method::List(ListMethod::ResourceTemplates),
            "tools/call" => Method::CallTool,
            "prompts/get" => Method::GetPrompt,
            "resources/read" => Method::ReadResource,
            "completion/complete" => Method::Complete,
            "resources/subscribe" => Method::Subscribe,
            "resources/unsubscribe" => Method::Unsubscribe,
            "logging/setLevel" => Method::SetLogLevel,
            "tasks/get" => Method::TasksGet,
            "tasks/list" => Method::TasksList,
            "tasks/cancel" => Method::TasksCancel,
            "tasks/update" => Method::TasksUpdate,
            "tasks/result" => Method::TasksResult,
            "subscriptions/listen" => Method::Listen,
            other => Method::Other(other.to_owned()),
        }
    }

    /// The method's name as a label: its name on the wire, or `other` for a method this host
    /// does not know (a client chooses those, so they are never a label of their own).
    pub fn label(&self) -> &'static str {
        self.known_name().unwrap_or("other")
    }

    /// The method's name on the wire.
    pub fn name(&self) -> &str {
        match self {
            Method::Other(name) => name,
            known => known.known_name().unwrap_or_default(),
        }
    }

    fn known_name(&self) -> Option<&'static str> {
        Some(match self {
            Method::Initialize => "initialize",
            Method::Ping => "ping",
            Method::Discover => "server/discover",
            Method::List(list) => list.name(),
            Method::CallTool => "tools/call",
            Method::GetPrompt => "prompts/get",
            Method::ReadResource => "resources/read",
            Method::Complete => "completion/complete",
            Method::Subscribe => "resources/subscribe",
            Method::Unsubscribe => "resources/unsubscribe",
            Method::SetLogLevel => "logging/setLevel",
            Method::TasksGet => "tasks/get",
            Method::TasksList => "tasks/list",
            Method::TasksCancel => "tasks/cancel",
            Method::TasksUpdate => "tasks/update",
            Method::TasksResult => "tasks/result",
            Method::Listen => "subscriptions/listen",
            Method::Other(_) => return None,
        })
    }

    /// Whether serving it may wait (on a plugin, or on a task): such a request runs as a task of
    /// its own, admitted against the channel's limits. Everything else is answered at once.
    pub fn waits(&self, era: Era) -> bool {
        match self {
            Method::CallTool | Method::GetPrompt | Method::ReadResource | Method::Complete | Method::TasksResult => true,
            Method::Listen => matches!(era, Era::Modern { .. }),
            _ => false,
        }
    }

    /// Whether the method may end with `input-required` from its plugin.
    pub fn takes_input(&self) -> bool {
        matches!(self, Method::CallTool | Method::GetPrompt | Method::ReadResource)
    }

    /// Methods that 2026-07-28 removed; a stateless request for them is an unknown method.
    pub fn removed_in_stateless(&self) -> bool {
        matches!(self, Method::Initialize | Method::Ping | Method::SetLogLevel | Method::Subscribe | Method::Unsubscribe)
    }
}

/// A request with its params parsed.
#[derive(Debug)]
pub enum Request {
    Initialize,
    Ping,
    Discover,
    List {
        list: ListMethod,
        cursor: Option<String>,
    },
    Call(Call),
    Complete {
        target: CompletionTarget,
        argument: (String, String),
        context: Vec<(String, String)>,
    },
    Subscribe {
        uri: String,
    },
    Unsubscribe {
        uri: String,
    },
    SetLogLevel(LogLevel),
    Task(TaskRequest),
    /// Methods the server does not have, and methods this era does not have.
    Unknown(Method),
}

impl Request {
    /// Parses the params of `method` for a request served in `era`. Params a method of that era
    /// does not define are ignored, as they always were.
    pub fn parse(method: Method, params: Option<Map<String, Value>>, era: Era) -> Result<Request, McpError> {
        let params = params.as_ref();
        Ok(match method {
            Method::Initialize => Request::Initialize,
            Method::Ping => Request::Ping,
            Method::Discover => Request::Discover,
            Method::List(list) => Request::List { list, cursor: cursor(params)? },
            Method::CallTool | Method::GetPrompt | Method::ReadResource => Request::Call(Call::parse(&method, params, era)?),
            Method::Complete => complete(params)?,
            Method::Subscribe => Request::Subscribe { uri: required_str(params, "uri")?.to_owned() },
            Method::Unsubscribe => Request::Unsubscribe { uri: required_str(params, "uri")?.to_owned() },
            Method::SetLogLevel => {
                let level = params.and_then(|p| p.get("level")).and_then(Value::as_str).and_then(LogLevel::parse).ok_or_else(|| {
                    McpError::InvalidParams("`level` must be one of debug, info, notice, warning, error, critical, alert, emergency".to_owned())
                })?;
                Request::SetLogLevel(level)
            }
            Method::TasksGet | Method::TasksList | Method::TasksCancel | Method::TasksUpdate | Method::TasksResult => {
                Request::Task(TaskRequest::parse(&method, params)?)
            }
            Method::Listen | Method::Other(_) => Request::Unknown(method),
        })
    }
}

/// Which list a list method reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListMethod {
    Tools,
    Prompts,
    Resources,
    ResourceTemplates,
}

impl ListMethod {
    /// The method's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            ListMethod::Tools => "tools/list",
            ListMethod::Prompts => "prompts/list",
            ListMethod::Resources => "resources/list",
            ListMethod::ResourceTemplates => "resources/templates/list",
        }
    }
}

/// A request that may need input, as the client sent it.
#[derive(Debug, Clone)]
pub enum Target {
    /// `arguments` is the JSON text of an object: written once here, handed to the plugin as is.
    Tool {
        name: String,
        arguments: String,
    },
    Prompt {
        name: String,
        arguments: Vec<(String, String)>,
        raw: Value,
    },
    Read {
        uri: String,
    },
}

/// A `tools/call`, `prompts/get` or `resources/read`, parsed.
#[derive(Debug)]
pub struct Call {
    pub(super) target: Target,
    /// 2025-11-25: the `task` param as sent, read once the tool's task support is known.
    pub(super) task: Option<Value>,
    /// 2026-07-28: the answers and the sealed round a retry brings, as sent.
    pub(super) responses: Option<Value>,
    pub(super) state: Option<Value>,
}

impl Call {
    pub(super) fn parse(method: &Method, params: Option<&Map<String, Value>>, era: Era) -> Result<Call, McpError> {
        let target = Target::parse(method, params)?;
        let field = |key: &str| params.and_then(|p| p.get(key)).filter(|v| !v.is_null()).cloned();
        let (task, responses, state) = match era {
            Era::Legacy { version } if version.has_experimental_tasks() && matches!(target, Target::Tool { .. }) => (field("task"), None, None),
            Era::Legacy { .. } => (None, None, None),
            Era::Modern { .. } => (None, field("inputResponses"), field("requestState")),
        };
        Ok(Call { target, task, responses, state })
    }
}

impl Target {
    fn parse(method: &Method, params: Option<&Map<String, Value>>) -> Result<Target, McpError> {
        match method {
            Method::CallTool => {
                let name = required_str(params, "name")?.to_owned();
                let arguments = match params.and_then(|p| p.get("arguments")) {
                    None | Some(Value::Null) => "{}".to_owned(),
                    Some(value @ Value::Object(_)) => value.to_string(),
                    Some(_) => return Err(McpError::InvalidParams("`arguments` must be an object".to_owned())),
                };
                Ok(Target::Tool { name, arguments })
            }
            Method::GetPrompt => {
                let name = required_str(params, "name")?.to_owned();
                let mut arguments = Vec::new();
                let raw = match params.and_then(|p| p.get("arguments")) {
                    None | Some(Value::Null) => json!({}),
                    Some(Value::Object(args)) => {
                        for (key, value) in args {
                            let Value::String(value) = value else {
                                return Err(McpError::InvalidParams(format!("prompt argument `{}` must be a string", shortened(key))));
                            };
                            arguments.push((key.clone(), value.clone()));
                        }
                        Value::Object(args.clone())
                    }
                    Some(_) => return Err(McpError::InvalidParams("`arguments` must be an object".to_owned())),
                };
                Ok(Target::Prompt { name, arguments, raw })
            }
            _ => Ok(Target::Read { uri: required_str(params, "uri")?.to_owned() }),
        }
    }
}

/// A `tasks/*` request, parsed.
#[derive(Debug)]
pub enum TaskRequest {
    Get {
        id: String,
    },
    List {
        cursor: Option<String>,
    },
    Cancel {
        id: String,
    },
    /// `inputResponses` as sent: checked once the task is known.
    Update {
        id: String,
        responses: Option<Value>,
    },
    Result {
        id: String,
    },
}

impl TaskRequest {
    pub(super) fn parse(method: &Method, params: Option<&Map<String, Value>>) -> Result<TaskRequest, McpError> {
        if *method == Method::TasksList {
            return Ok(TaskRequest::List { cursor: cursor(params)? });
        }
        let id = required_str(params, "taskId")?.to_owned();
        Ok(match method {
            Method::TasksGet => TaskRequest::Get { id },
            Method::TasksCancel => TaskRequest::Cancel { id },
            Method::TasksUpdate => TaskRequest::Update { id, responses: params.and_then(|p| p.get("inputResponses")).cloned() },
            _ => TaskRequest::Result { id },
        })
    }
}

/// A list's `cursor`, when it has one.
fn cursor(params: Option<&Map<String, Value>>) -> Result<Option<String>, McpError> {
    match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(cursor)) => Ok(Some(cursor.clone())),
        Some(_) => Err(McpError::InvalidParams("`cursor` must be a string".to_owned())),
    }
}

pub(super) fn required_str<'a>(params: Option<&'a Map<String, Value>>, key: &str) -> Result<&'a str, McpError> {
    params.and_then(|p| p.get(key)).and_then(Value::as_str).ok_or_else(|| McpError::missing_str(key))
}

fn complete(params: Option<&Map<String, Value>>) -> Result<Request, McpError> {
    let reference = params.and_then(|p| p.get("ref")).and_then(Value::as_object).ok_or_else(|| McpError::InvalidParams("missing `ref`".to_owned()))?;
    let target = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => CompletionTarget::Prompt(required_str(Some(reference), "name")?.to_owned()),
        Some("ref/resource") => CompletionTarget::ResourceTemplate(required_str(Some(reference), "uri")?.to_owned()),
        _ => return Err(McpError::InvalidParams("`ref.type` must be `ref/prompt` or `ref/resource`".to_owned())),
    };
    let argument = params.and_then(|p| p.get("argument")).and_then(Value::as_object).ok_or_else(|| McpError::InvalidParams("missing `argument`".to_owned()))?;
    let name = required_str(Some(argument), "name")?.to_owned();
    let value = argument.get("value").and_then(Value::as_str).unwrap_or_default().to_owned();
    let context = params
        .and_then(|p| p.get("context"))
        .and_then(|c| c.get("arguments"))
        .and_then(Value::as_object)
        .map(|args| args.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned()))).collect())
        .unwrap_or_default();
    Ok(Request::Complete { target, argument: (name, value), context })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_name_reads_back_as_itself() {
        for name in [
            "initialize",
            "ping",
            "server/discover",
            "tools/list",
            "prompts/list",
            "resources/list",
            "resources/templates/list",
            "tools/call",
            "prompts/get",
            "resources/read",
            "completion/complete",
            "resources/subscribe",
            "resources/unsubscribe",
            "logging/setLevel",
            "tasks/get",
            "tasks/list",
            "tasks/cancel",
            "tasks/update",
            "tasks/result",
            "subscriptions/listen",
            "no/such",
        ] {
            assert_eq!(Method::parse(name).name(), name);
        }
        assert_eq!(Method::parse("no/such"), Method::Other("no/such".into()));
    }
}
