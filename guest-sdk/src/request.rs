//! The request being served: who asked, under which protocol, and the input model. A handler
//! that takes `&Request` can ask the client for input (a form, a page to visit, a completion
//! from its model, its roots) by key; when an answer is not there yet, the call ends with the
//! question and runs again, in a fresh instance, once the client has answered.
//!
//! ```ignore
//! #[derive(Deserialize, JsonSchema)]
//! struct UserName { name: String }
//!
//! /// Greets the user by name, asking for it.
//! #[tool]
//! fn greet(cx: &Request) -> paddock_sdk::Result<String> {
//!     let Elicited::Accepted(user) = cx.elicit::<UserName>("user_name", "What is your name?")? else {
//!         return Ok("Maybe next time.".into());
//!     };
//!     Ok(format!("Hello, {}!", user.name))
//! }
//! ```
//!
//! Several questions go out in one round when each is asked before any `?`:
//! `let (a, b) = (cx.elicit::<A>("a", "..."), cx.roots("roots")); let (a, b) = (a?, b?);`.

use std::cell::RefCell;
use std::fmt::Display;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::bindings::paddock::plugin::context::{Era, RequestContext};
use crate::bindings::paddock::plugin::input::{
    ElicitationAction, FormElicitation, InputRequest, InputRequestKind, InputRequired, InputResponseKind, SamplingContent, SamplingMessage, SamplingRequest,
    UrlElicitation,
};
use crate::bindings::paddock::plugin::types::{Error as WitError, Role, TextContent};
use crate::schema;

pub use crate::bindings::paddock::plugin::input::{ModelHint, ModelPreferences, Root, SamplingResult};

/// Why a handler did not produce a result: it failed (the message is shown), or it needs input
/// from the client first. `?` converts any displayable error, and the `Ask` of a missing answer.
#[derive(Debug)]
pub struct Error(pub(crate) Halt);

#[derive(Debug)]
pub(crate) enum Halt {
    Failed(String),
    InvalidParams(String),
    NeedsInput,
}

impl Halt {
    /// The WIT error of a handler that did not finish, unless it needs input.
    pub(crate) fn into_wit(self) -> Option<WitError> {
        match self {
            Halt::Failed(message) => Some(WitError::Failed(message)),
            Halt::InvalidParams(message) => Some(WitError::InvalidParams(message)),
            Halt::NeedsInput => None,
        }
    }
}

/// A `Result` whose error is an [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Proof that a question was recorded on the [`Request`] and the call must wait for its answer.
#[derive(Debug)]
pub struct Ask(());

impl<E: Display> From<E> for Error {
    fn from(error: E) -> Error {
        Error(Halt::Failed(error.to_string()))
    }
}

impl From<Ask> for Error {
    fn from(_: Ask) -> Error {
        Error(Halt::NeedsInput)
    }
}

impl Error {
    /// A failure with this message.
    pub fn failed(message: impl Into<String>) -> Error {
        Error(Halt::Failed(message.into()))
    }

    /// Refuses the request itself: the client gets a JSON-RPC error (-32602) rather than a
    /// result. For a tool, prefer an error result (`Err` of any other kind), which the model
    /// reads and can act on; refuse only what no retry by the model could fix.
    pub fn invalid_params(message: impl Into<String>) -> Error {
        Error(Halt::InvalidParams(message.into()))
    }
}

/// What the user did with a form.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// The user filled it in.
    Accepted(T),
    /// The user said no.
    Declined,
    /// The user dismissed it.
    Cancelled,
}

/// The request a handler is serving.
#[derive(Debug)]
pub struct Request {
    context: RequestContext,
    capabilities: Value,
    meta: Value,
    asked: RefCell<Vec<InputRequest>>,
    next_state: RefCell<Option<Vec<u8>>>,
    in_task: std::cell::Cell<bool>,
}

impl Request {
    pub(crate) fn new(context: RequestContext) -> Request {
        let capabilities = serde_json::from_str(&context.client_capabilities).unwrap_or(Value::Object(Default::default()));
        let meta = serde_json::from_str(&context.meta).unwrap_or(Value::Object(Default::default()));
        Request { context, capabilities, meta, asked: RefCell::default(), next_state: RefCell::default(), in_task: std::cell::Cell::new(false) }
    }

    /// The protocol revision of the request, for example `2025-11-25` or `2026-07-28`.
    pub fn protocol_version(&self) -> &str {
        &self.context.protocol_version
    }

    /// Whether the request is a stateless 2026-07-28 one (else it belongs to a session).
    pub fn is_stateless(&self) -> bool {
        self.context.era == Era::Stateless
    }

    /// The client's declared capabilities (an MCP `ClientCapabilities` object).
    pub fn client_capabilities(&self) -> &Value {
        &self.capabilities
    }

    /// Whether the client declared a capability, by a dotted path such as `sampling`,
    /// `elicitation.url` or `sampling.tools`. An empty `elicitation` object declares form mode.
    pub fn client_supports(&self, path: &str) -> bool {
        let empty_elicitation = self.capabilities.get("elicitation").and_then(Value::as_object).is_some_and(|o| o.is_empty());
        if path == "elicitation.form" && empty_elicitation {
            return true;
        }
        let mut node = &self.capabilities;
        for part in path.split('.') {
            match node.get(part) {
                Some(next) => node = next,
                None => return false,
            }
        }
        true
    }

    /// The client's name, as it describes itself.
    pub fn client_name(&self) -> Option<&str> {
        self.context.client_info.as_ref().map(|c| c.name.as_str())
    }

    /// The request's `_meta` object.
    pub fn meta(&self) -> &Value {
        &self.meta
    }

    /// Whether the client asked for progress notifications.
    pub fn wants_progress(&self) -> bool {
        self.context.has_progress_token
    }

    /// The W3C `traceparent` this call continues: the host's span of the request when the host
    /// exports traces, else the client's own, when it sent one. The host adds the context to
    /// every outgoing HTTP request of the call by itself; a plugin needs this only to pass the
    /// trace on some other way.
    pub fn traceparent(&self) -> Option<&str> {
        self.context.trace.traceparent.as_deref()
    }

    /// The W3C `tracestate` that goes with `traceparent`, when there is one.
    pub fn tracestate(&self) -> Option<&str> {
        self.context.trace.tracestate.as_deref()
    }

    /// The W3C `baggage` the client sent with the request, when it sent one.
    pub fn baggage(&self) -> Option<&str> {
        self.context.trace.baggage.as_deref()
    }

    /// The authenticated caller, when the transport authenticates one.
    pub fn caller(&self) -> Option<&str> {
        self.context.caller.as_deref()
    }

    /// The state this plugin kept in the previous round of this request (see `keep_state`).
    pub fn state(&self) -> Option<&[u8]> {
        self.context.state.as_deref()
    }

    /// Bytes to get back (through `state`) when the call runs again with the answers. The host
    /// seals them: the client can neither read nor change them. At most 64 KiB.
    pub fn keep_state(&self, state: impl Into<Vec<u8>>) {
        *self.next_state.borrow_mut() = Some(state.into());
    }

    /// Whether the client has answered the question under `key`.
    pub fn answered(&self, key: &str) -> bool {
        self.answer(key).is_some()
    }

    fn answer(&self, key: &str) -> Option<&InputResponseKind> {
        self.context.input_responses.iter().find(|r| r.key == key).map(|r| &r.response)
    }

    fn ask(&self, key: &str, request: InputRequestKind) -> Ask {
        let mut asked = self.asked.borrow_mut();
        if !asked.iter().any(|r| r.key == key) {
            asked.push(InputRequest { key: key.to_owned(), request });
        }
        Ask(())
    }

    /// Asks the user to fill in a form shaped by `T` (flat: strings, numbers, booleans, enums).
    /// Never ask for secrets in a form: use `elicit_url`.
    pub fn elicit<T: DeserializeOwned + JsonSchema>(&self, key: &str, message: &str) -> Result<Elicited<T>> {
        // The schema is only written when the question goes out.
        let requested_schema = match self.answer(key) {
            Some(InputResponseKind::Elicitation(_)) => Value::Null,
            _ => schema::input_of::<T>(),
        };
        self.elicit_with_schema(key, message, requested_schema)
    }

    /// Asks the user to fill in a form written by hand, for what a derive does not write:
    /// titled single and multiple choices (`oneOf`/`anyOf` of `const` and `title`), legacy
    /// `enumNames`, defaults. The answer is read as `T` (a `serde_json::Value` takes anything).
    pub fn elicit_with_schema<T: DeserializeOwned>(&self, key: &str, message: &str, requested_schema: Value) -> Result<Elicited<T>> {
        match self.answer(key) {
            Some(InputResponseKind::Elicitation(result)) => match result.action {
                ElicitationAction::Accept => {
                    let content = result.content.as_deref().unwrap_or("{}");
                    serde_json::from_str(content)
                        .map(Elicited::Accepted)
                        .map_err(|e| Error::failed(format!("the answer to `{key}` does not fit its form: {e}")))
                }
                ElicitationAction::Decline => Ok(Elicited::Declined),
                ElicitationAction::Cancel => Ok(Elicited::Cancelled),
            },
            _ => {
                let form = FormElicitation { message: message.to_owned(), requested_schema: requested_schema.to_string() };
                Err(self.ask(key, InputRequestKind::ElicitForm(form)).into())
            }
        }
    }

    /// Asks the user to visit `url` (sign-ins, payments, anything secret). `Accepted(())` only
    /// means the user agreed to go; keep your own record (in `keep_state`) of whether it finished.
    pub fn elicit_url(&self, key: &str, message: &str, url: &str) -> Result<Elicited<()>> {
        match self.answer(key) {
            Some(InputResponseKind::Elicitation(result)) => Ok(match result.action {
                ElicitationAction::Accept => Elicited::Accepted(()),
                ElicitationAction::Decline => Elicited::Declined,
                ElicitationAction::Cancel => Elicited::Cancelled,
            }),
            _ => Err(self.ask(key, InputRequestKind::ElicitUrl(UrlElicitation { message: message.to_owned(), url: url.to_owned() })).into()),
        }
    }

    /// Asks the client's model for a completion.
    pub fn sample(&self, key: &str, request: Sampling) -> Result<SamplingResult> {
        match self.answer(key) {
            Some(InputResponseKind::Sampling(result)) => Ok(result.clone()),
            _ => Err(self.ask(key, InputRequestKind::Sample(request.0)).into()),
        }
    }

    /// Asks what this run asks as part of a task: when the tool supports tasks and the client
    /// accepts one, the call becomes a task that waits in `input_required` for the answers
    /// (the client polls it and answers through it). Without a task the questions are asked as
    /// usual. Call it before the question that ends the run.
    ///
    /// ```ignore
    /// cx.ask_within_task();
    /// let confirmed = cx.elicit::<Confirm>("confirm", "Delete the file?")?;
    /// ```
    pub fn ask_within_task(&self) {
        self.in_task.set(true);
    }

    /// Asks the client for the roots it exposes.
    pub fn roots(&self, key: &str) -> Result<Vec<Root>> {
        match self.answer(key) {
            Some(InputResponseKind::Roots(roots)) => Ok(roots.clone()),
            _ => Err(self.ask(key, InputRequestKind::ListRoots).into()),
        }
    }

    /// The keys of the questions this request's handler asked, in order (for tests: what a call
    /// that ended waiting for input is waiting for).
    pub fn questions(&self) -> Vec<String> {
        self.asked.borrow().iter().map(|r| r.key.clone()).collect()
    }

    /// The questions asked in this run and the state to keep, as the call's `input-required`.
    pub(crate) fn input_required(&self) -> InputRequired {
        InputRequired { requests: self.asked.take(), state: self.next_state.take(), in_task: self.in_task.get() }
    }
}

/// A request for a completion from the client's model.
#[derive(Debug, Clone)]
pub struct Sampling(pub(crate) SamplingRequest);

impl Sampling {
    /// One user message, answered in at most `max_tokens` tokens.
    pub fn prompt(text: impl Into<String>, max_tokens: u32) -> Sampling {
        Sampling(SamplingRequest {
            messages: vec![SamplingMessage { role: Role::User, content: vec![text_content(text)], meta: None }],
            system_prompt: None,
            max_tokens,
            temperature: None,
            stop_sequences: Vec::new(),
            model_preferences: None,
            include_context: None,
            metadata: None,
            tools: None,
            tool_choice: None,
        })
    }

    /// Any request MCP allows (messages with tool use, model preferences, tools).
    pub fn from_request(request: SamplingRequest) -> Sampling {
        Sampling(request)
    }

    /// Adds an assistant message and a further user message.
    pub fn then(mut self, assistant: impl Into<String>, user: impl Into<String>) -> Sampling {
        self.0.messages.push(SamplingMessage { role: Role::Assistant, content: vec![text_content(assistant)], meta: None });
        self.0.messages.push(SamplingMessage { role: Role::User, content: vec![text_content(user)], meta: None });
        self
    }

    /// Sets the system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Sampling {
        self.0.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the temperature.
    pub fn temperature(mut self, temperature: f64) -> Sampling {
        self.0.temperature = Some(temperature);
        self
    }

    /// Prefers models whose name contains `name`.
    pub fn prefer_model(mut self, name: impl Into<String>) -> Sampling {
        let preferences = self.0.model_preferences.get_or_insert(ModelPreferences {
            hints: Vec::new(),
            cost_priority: None,
            speed_priority: None,
            intelligence_priority: None,
        });
        preferences.hints.push(ModelHint { name: Some(name.into()) });
        self
    }
}

fn text_content(text: impl Into<String>) -> SamplingContent {
    SamplingContent::Text(TextContent { text: text.into(), annotations: None, meta: None })
}

/// The text of a sampling result (its text blocks, joined).
pub fn sampled_text(result: &SamplingResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            SamplingContent::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}
