//! The conformance plugin: every tool, resource, template and prompt that the MCP conformance
//! suite (`@modelcontextprotocol/conformance`) names for `--requirements 2025-11-25` and
//! `--requirements 2026-07-28`, written with the guest SDK as any author would. Serve it with
//! `expose = { prefix = "" }` so the names are exactly the suite's.
//!
//! The host knows nothing of it: each fixture uses only the contract (content, progress,
//! logging, input requests, list changes, tasks, cache hints).

mod content;
mod input;
mod tasks;

use content::*;
use input::*;
use tasks::*;

use paddock_sdk::{CacheHint, Completing, export_plugin};

/// Suggestions for the arguments of `test_prompt_with_arguments`, by prefix.
fn complete(c: &Completing) -> Vec<String> {
    let known: &[&str] = match (c.target, c.argument) {
        ("test_prompt_with_arguments", "arg1") => &["test", "testValue1", "paddock"],
        ("test_prompt_with_arguments", "arg2") => &["testValue2", "other"],
        ("test://template/{id}/data", "id") => &["123", "456"],
        _ => &[],
    };
    known.iter().filter(|v| v.starts_with(c.value)).map(|v| (*v).to_owned()).collect()
}

export_plugin! {
    name: "conformance",
    version: env!("CARGO_PKG_VERSION"),
    title: "MCP conformance fixtures",
    description: "The fixtures of the MCP conformance suite, for both requirement sets",
    list_cache: CacheHint::public(300_000),
    tools: [
        test_simple_text, test_image_content, test_audio_content, test_embedded_resource, test_multiple_content_types,
        test_error_handling, test_tool_with_progress, test_tool_with_logging, test_reconnection, json_schema_2020_12_tool,
        test_streaming_elicitation, test_logging_tool, test_trigger_tool_change, test_trigger_prompt_change, test_trigger_resource_update,
        test_header_param,
        test_sampling, test_elicitation, test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums, test_missing_capability,
        test_input_required_result_elicitation, test_input_required_result_sampling, test_input_required_result_list_roots,
        test_input_required_result_request_state, test_input_required_result_multiple_inputs, test_input_required_result_multi_round,
        test_input_required_result_tampered_state, test_input_required_result_capabilities,
        greet, slow_compute, failing_job, protocol_error_job, confirm_delete, multi_input, test_tool_with_task,
    ],
    resources: [static_text, static_binary, watched_resource, stateless_static_text],
    resource_templates: [template_data],
    prompts: [test_simple_prompt, test_prompt_with_arguments, test_prompt_with_embedded_resource, test_prompt_with_image, test_input_required_result_prompt],
    completion: complete,
}
