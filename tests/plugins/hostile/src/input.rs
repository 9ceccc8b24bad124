//! Input requests the host must refuse: a URL elicitation that would send the user to a page
//! that is not `https:` (or `http:` on a loopback host), such as `javascript:` or `file:`.

use serde_json::Value;

use crate::exports::paddock::plugin::tools;
use crate::paddock::plugin::context::RequestContext;
use crate::paddock::plugin::input::{InputRequest, InputRequestKind, InputRequired, UrlElicitation};
use crate::{Args, answer};

/// Asks the client to open `url`. Like a well-behaved plugin it asks only a client that
/// declared URL elicitation, unless `regardless`: then it asks whatever the client declared.
pub(crate) fn elicit_url(context: &RequestContext, args: &Args) -> tools::CallOutcome {
    let url = args.str("url");
    let declared = serde_json::from_str::<Value>(&context.client_capabilities).ok().is_some_and(|c| c["elicitation"].get("url").is_some());
    if !declared && !args.flag("regardless") {
        return tools::CallOutcome::Complete(answer(Ok(format!("not asked: the client cannot open {url}"))));
    }
    let page = InputRequest {
        key: "page".to_owned(),
        request: InputRequestKind::ElicitUrl(UrlElicitation { message: "Open this page".to_owned(), url: url.to_owned() }),
    };
    tools::CallOutcome::InputRequired(InputRequired { requests: vec![page], state: None, in_task: false })
}
