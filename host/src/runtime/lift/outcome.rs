//! A request's outcome lifted from the guest: a complete result (through `convert`), or the
//! input the plugin needs first (through `input`).

use super::convert::{Budget, call_result, prompt_result, read_result};
use super::wit_input::input_required;
use crate::input::Outcome;
use crate::plugin::PluginError;
use crate::protocol::{CallToolResult, GetPromptResult, ReadResourceResult};
use crate::runtime::bindings::exports::paddock::plugin::{prompts as wp, resources as wr, tools as wt};

/// A tool call's outcome: a result, or the input it needs first.
pub(crate) fn call(o: wt::CallOutcome, budget: &mut Budget) -> Result<Outcome<CallToolResult>, PluginError> {
    match o {
        wt::CallOutcome::Complete(r) => call_result(r, budget).map(Outcome::Complete),
        wt::CallOutcome::InputRequired(r) => input_required(r, budget).map(Outcome::InputRequired),
    }
}

/// A resource read's outcome.
pub(crate) fn read(o: wr::ReadOutcome, budget: &mut Budget) -> Result<Outcome<ReadResourceResult>, PluginError> {
    match o {
        wr::ReadOutcome::Complete(r) => read_result(r, budget).map(Outcome::Complete),
        wr::ReadOutcome::InputRequired(r) => input_required(r, budget).map(Outcome::InputRequired),
    }
}

/// A prompt's outcome.
pub(crate) fn prompt(o: wp::PromptOutcome, budget: &mut Budget) -> Result<Outcome<GetPromptResult>, PluginError> {
    match o {
        wp::PromptOutcome::Complete(r) => prompt_result(r, budget).map(Outcome::Complete),
        wp::PromptOutcome::InputRequired(r) => input_required(r, budget).map(Outcome::InputRequired),
    }
}
