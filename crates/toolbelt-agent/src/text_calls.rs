//! Tool calls written as text by models without native tool calling.

use toolbelt_core::{ToolCall, Toolset};

/// Splits `text` into the prose and the tool calls written in it.
///
/// Calls count only when at least one names a tool of `tools`, so an answer
/// that merely shows some JSON is not mistaken for calls. Their ids are made
/// unique within the run from `iteration` (the parser numbers them per text).
pub(crate) fn extract(
    text: String,
    tools: &Toolset,
    iteration: u32,
) -> (Option<String>, Vec<ToolCall>) {
    let parsed = toolbelt_llm::parse_tool_calls(&text);
    if !parsed.tool_calls.iter().any(|c| tools.contains(&c.name)) {
        return (Some(text), Vec::new());
    }
    tracing::debug!(
        calls = parsed.tool_calls.len(),
        "tool calls parsed from text"
    );
    let calls = parsed
        .tool_calls
        .into_iter()
        .enumerate()
        .map(|(i, mut call)| {
            call.id = format!("text_{iteration}_{i}");
            call
        })
        .collect();
    let prose = (!parsed.text.is_empty()).then_some(parsed.text);
    (prose, calls)
}
