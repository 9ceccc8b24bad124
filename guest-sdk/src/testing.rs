//! Requests for a plugin's own unit tests: build the [`Request`] a handler is given (protocol
//! and era, the client's capabilities, info and `_meta`, the caller, the answers to earlier
//! questions and the state kept with them), call the handler directly, and read back what it
//! asked.
//!
//! ```ignore
//! use paddock_sdk::testing::TestRequest;
//!
//! #[test]
//! fn greet_asks_for_the_name_then_uses_it() {
//!     let first = TestRequest::new().capabilities(serde_json::json!({"elicitation": {}})).build();
//!     assert!(greet(&first).is_err());
//!     assert_eq!(first.questions(), ["user_name"]);
//!
//!     let retry = TestRequest::new().accepted("user_name", serde_json::json!({"name": "Ada"})).build();
//!     assert_eq!(greet(&retry).unwrap(), "Hello, Ada!");
//! }
//! ```

use serde_json::Value;

use crate::bindings::paddock::plugin::context::{ClientInfo, Era, RequestContext, TraceContext};
use crate::bindings::paddock::plugin::input::{ElicitationAction, ElicitationResult, InputResponse, InputResponseKind, SamplingContent, SamplingResult};
use crate::bindings::paddock::plugin::types::{Role, TextContent};
use crate::request::{Request, Root};

/// A [`Request`] being built for a test. It starts as a legacy (`2025-11-25`, session) request
/// from a client that declared no capabilities, with no answers and no state.
#[derive(Debug)]
pub struct TestRequest {
    context: RequestContext,
}

impl Default for TestRequest {
    fn default() -> Self {
        TestRequest::new()
    }
}

impl TestRequest {
    /// A `2025-11-25` request in a session, from a client that declared nothing.
    pub fn new() -> TestRequest {
        TestRequest {
            context: RequestContext {
                protocol_version: "2025-11-25".to_owned(),
                era: Era::Session,
                client_capabilities: "{}".to_owned(),
                client_info: None,
                meta: "{}".to_owned(),
                has_progress_token: false,
                trace: TraceContext { traceparent: None, tracestate: None, baggage: None },
                caller: None,
                input_responses: Vec::new(),
                state: None,
            },
        }
    }

    /// A stateless `2026-07-28` request.
    pub fn stateless(mut self) -> TestRequest {
        self.context.protocol_version = "2026-07-28".to_owned();
        self.context.era = Era::Stateless;
        self
    }

    /// The client's declared capabilities (an MCP `ClientCapabilities` object).
    pub fn capabilities(mut self, capabilities: Value) -> TestRequest {
        self.context.client_capabilities = capabilities.to_string();
        self
    }

    /// The client's name and version.
    pub fn client(mut self, name: &str, version: &str) -> TestRequest {
        self.context.client_info = Some(ClientInfo { name: name.to_owned(), version: version.to_owned(), title: None });
        self
    }

    /// The request's `_meta`.
    pub fn meta(mut self, meta: Value) -> TestRequest {
        self.context.meta = meta.to_string();
        self
    }

    /// The authenticated caller (`issuer subject`).
    pub fn caller(mut self, caller: &str) -> TestRequest {
        self.context.caller = Some(caller.to_owned());
        self
    }

    /// The client asked for progress.
    pub fn with_progress(mut self) -> TestRequest {
        self.context.has_progress_token = true;
        self
    }

    /// The state the handler kept with its questions (`Request::keep_state`).
    pub fn state(mut self, state: impl Into<Vec<u8>>) -> TestRequest {
        self.context.state = Some(state.into());
        self
    }

    /// The user filled in the form asked as `key` with `content`.
    pub fn accepted(self, key: &str, content: Value) -> TestRequest {
        self.elicited(key, ElicitationAction::Accept, Some(content.to_string()))
    }

    /// The user declined the form or page asked as `key`.
    pub fn declined(self, key: &str) -> TestRequest {
        self.elicited(key, ElicitationAction::Decline, None)
    }

    /// The user dismissed the form or page asked as `key`.
    pub fn cancelled(self, key: &str) -> TestRequest {
        self.elicited(key, ElicitationAction::Cancel, None)
    }

    /// The user visited the page asked as `key` (`Request::elicit_url`).
    pub fn visited(self, key: &str) -> TestRequest {
        self.elicited(key, ElicitationAction::Accept, None)
    }

    /// The client's model answered the sampling request asked as `key` with `text`.
    pub fn sampled(mut self, key: &str, text: &str) -> TestRequest {
        let result = SamplingResult {
            role: Role::Assistant,
            content: vec![SamplingContent::Text(TextContent { text: text.to_owned(), annotations: None, meta: None })],
            model: "test-model".to_owned(),
            stop_reason: Some("endTurn".to_owned()),
            meta: None,
        };
        self.context.input_responses.push(InputResponse { key: key.to_owned(), response: InputResponseKind::Sampling(result) });
        self
    }

    /// The client listed `roots` for the request asked as `key`.
    pub fn roots(mut self, key: &str, roots: Vec<Root>) -> TestRequest {
        self.context.input_responses.push(InputResponse { key: key.to_owned(), response: InputResponseKind::Roots(roots) });
        self
    }

    fn elicited(mut self, key: &str, action: ElicitationAction, content: Option<String>) -> TestRequest {
        let response = InputResponseKind::Elicitation(ElicitationResult { action, content });
        self.context.input_responses.push(InputResponse { key: key.to_owned(), response });
        self
    }

    /// The request, to pass to a handler.
    pub fn build(self) -> Request {
        Request::new(self.context)
    }
}
