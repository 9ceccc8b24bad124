//! The hostile-plugin component: every tool is one attack on the host, chosen by name, and its
//! arguments aim the same operation inside a grant or keep it bounded for the attack's permitted
//! twin. The table that drives it is `tests/escape/attacks.rs`; the suite fails when a tool
//! listed here has no row there.
//!
//! It is written against `wit/paddock-plugin@0.2.0/plugin.wit` with wit-bindgen and calls WASI through raw `wasip2`
//! bindings rather than libc or the guest SDK, so each attack reaches the host as written.
//!
//! The operator can make its catalog hostile too: with `HOSTILE_CATALOG = "trap"` granted in its
//! environment, listing its tools traps while the host loads it.

use serde_json::Value;

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/paddock-plugin@0.2.0" });

mod bombs;
mod files;
mod input;
mod network;

use exports::paddock::plugin::{completion, metadata, prompts, resources, tools};
use paddock::plugin::context::RequestContext;
use paddock::plugin::types::{ContentBlock, Error, TextContent};

struct Hostile;

/// Every attack tool, by name. Each takes a JSON object; see the module that implements it.
const TOOLS: &[&str] = &[
    // files.rs
    "read_at",
    "read_std",
    "write_at",
    "mkdir_at",
    "unlink_at",
    "symlink_then_read",
    "rename_at",
    "hardlink_at",
    "stat_at",
    "list_at",
    // network.rs
    "ambient",
    "http_get",
    "http_parallel",
    "header_bomb",
    "tcp_connect",
    "tcp_listen",
    "udp_bind",
    "udp_send",
    "dns_lookup",
    // bombs.rs
    "spin",
    "grow_vec",
    "memory_grow_raw",
    "recurse",
    "block_on_clock",
    "exit_process",
    "panic_now",
    "print_flood",
    "newline_flood",
    "log_flood",
    "progress_flood",
    "notice_flood",
    "big_result",
    "many_blocks",
    "structured",
    "result_meta",
    "open_many",
    "fields_many",
    "pollables_many",
    // input.rs
    "elicit_url",
];

/// A tool's arguments.
pub(crate) struct Args(Value);

impl Args {
    /// A string argument, empty when absent.
    pub(crate) fn str(&self, key: &str) -> &str {
        self.0.get(key).and_then(Value::as_str).unwrap_or_default()
    }

    /// An integer argument, 0 when absent.
    pub(crate) fn int(&self, key: &str) -> u64 {
        self.0.get(key).and_then(Value::as_u64).unwrap_or(0)
    }

    /// A boolean argument, false when absent.
    pub(crate) fn flag(&self, key: &str) -> bool {
        self.0.get(key).and_then(Value::as_bool).unwrap_or(false)
    }
}

/// What an attack met when the host stopped it short of a result: the call answers with an
/// error result carrying this text.
#[derive(Debug)]
pub(crate) struct Refused(pub(crate) String);

impl From<wasip2::filesystem::types::ErrorCode> for Refused {
    fn from(code: wasip2::filesystem::types::ErrorCode) -> Refused {
        Refused(code.name().to_owned())
    }
}

impl From<wasip2::sockets::network::ErrorCode> for Refused {
    fn from(code: wasip2::sockets::network::ErrorCode) -> Refused {
        Refused(code.name().to_owned())
    }
}

/// The outcome of an attack tool: text for an ordinary result, or what refused it.
pub(crate) type Outcome = Result<String, Refused>;

pub(crate) fn text(s: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent { text: s.into(), annotations: None, meta: None })
}

pub(crate) fn answer(outcome: Outcome) -> tools::CallResult {
    let (message, is_error) = match outcome {
        Ok(message) => (message, false),
        Err(Refused(message)) => (format!("refused: {message}"), true),
    };
    tools::CallResult { content: vec![text(message)], structured_content: None, is_error, meta: None }
}

impl metadata::Guest for Hostile {
    fn info() -> metadata::PluginInfo {
        metadata::PluginInfo {
            name: "hostile".to_owned(),
            version: "0.1.0".to_owned(),
            title: Some("Hostile plugin".to_owned()),
            description: Some("Attacks on the host, one tool each".to_owned()),
            instructions: None,
            website_url: None,
            icons: vec![],
            requests: metadata::RequestedCapabilities { files: vec![], network: vec![], env: vec![] },
        }
    }
}

impl tools::Guest for Hostile {
    fn list_tools() -> tools::ToolList {
        if std::env::var("HOSTILE_CATALOG").is_ok_and(|v| v == "trap") {
            panic!("the catalog traps while the host loads it");
        }
        let tools = TOOLS
            .iter()
            .map(|name| tools::Tool {
                name: (*name).to_owned(),
                title: None,
                description: Some(format!("attack {name}")),
                input_schema: r#"{"type":"object"}"#.to_owned(),
                output_schema: None,
                annotations: None,
                icons: vec![],
                meta: None,
                task_support: tools::TaskSupport::Forbidden,
                required_client_capabilities: None,
            })
            .collect();
        tools::ToolList { tools, cache: None }
    }

    fn call_tool(context: RequestContext, name: String, arguments: String) -> Result<tools::CallOutcome, Error> {
        if name == "elicit_url" {
            let args = Args(serde_json::from_str(&arguments).map_err(|e| Error::InvalidParams(e.to_string()))?);
            return Ok(input::elicit_url(&context, &args));
        }
        run_tool(name, arguments).map(tools::CallOutcome::Complete)
    }
}

fn run_tool(name: String, arguments: String) -> Result<tools::CallResult, Error> {
    {
        let args = Args(serde_json::from_str(&arguments).map_err(|e| Error::InvalidParams(e.to_string()))?);
        if let Some(result) = bombs::result_attack(&name, &args) {
            return Ok(result);
        }
        let outcome = match name.as_str() {
            "read_at" => files::read_at(&args),
            "read_std" => files::read_std(&args),
            "write_at" => files::write_at(&args),
            "mkdir_at" => files::mkdir_at(&args),
            "unlink_at" => files::unlink_at(&args),
            "symlink_then_read" => files::symlink_then_read(&args),
            "rename_at" => files::rename_at(&args),
            "hardlink_at" => files::hardlink_at(&args),
            "stat_at" => files::stat_at(&args),
            "list_at" => files::list_at(&args),
            "ambient" => network::ambient(),
            "http_get" => network::http_get(&args),
            "http_parallel" => network::http_parallel(&args),
            "header_bomb" => network::header_bomb(&args),
            "tcp_connect" => network::tcp_connect(&args),
            "tcp_listen" => network::tcp_listen(&args),
            "udp_bind" => network::udp_bind(&args),
            "udp_send" => network::udp_send(&args),
            "dns_lookup" => network::dns_lookup(&args),
            "spin" => bombs::spin(&args),
            "grow_vec" => bombs::grow_vec(&args),
            "memory_grow_raw" => bombs::memory_grow_raw(&args),
            "recurse" => bombs::recurse(&args),
            "block_on_clock" => bombs::block_on_clock(&args),
            "exit_process" => bombs::exit_process(&args),
            "panic_now" => bombs::panic_now(&args),
            "print_flood" => bombs::print_flood(&args),
            "newline_flood" => bombs::newline_flood(&args),
            "log_flood" => bombs::log_flood(&args),
            "progress_flood" => bombs::progress_flood(&args),
            "notice_flood" => bombs::notice_flood(&args),
            "open_many" => bombs::open_many(&args),
            "fields_many" => bombs::fields_many(&args),
            "pollables_many" => bombs::pollables_many(&args),
            other => return Err(Error::NotFound(other.to_owned())),
        };
        Ok(answer(outcome))
    }
}

impl resources::Guest for Hostile {
    fn list_resources() -> resources::ResourceList {
        resources::ResourceList { resources: vec![], cache: None }
    }

    fn list_resource_templates() -> resources::TemplateList {
        resources::TemplateList { templates: vec![], cache: None }
    }

    fn read_resource(_context: RequestContext, uri: String) -> Result<resources::ReadOutcome, Error> {
        Err(Error::NotFound(uri))
    }
}

impl prompts::Guest for Hostile {
    fn list_prompts() -> prompts::PromptList {
        prompts::PromptList { prompts: vec![], cache: None }
    }

    fn get_prompt(_context: RequestContext, name: String, _arguments: Vec<(String, String)>) -> Result<prompts::PromptOutcome, Error> {
        Err(Error::NotFound(name))
    }
}

impl completion::Guest for Hostile {
    fn complete(_context: RequestContext, _request: completion::CompletionRequest) -> Result<completion::CompletionResult, Error> {
        Ok(completion::CompletionResult { values: vec![], total: None, has_more: false })
    }
}

export!(Hostile);
