//! Every `#[tool(...)]` argument lands in the spec where the builder would put it.

use std::time::Duration;

use pretty_assertions::assert_eq;
use toolbelt_core::{Overflow, RetryPolicy, Tool, ToolKind, ToolSpec, schema_for};
use toolbelt_macros::tool;

// Mirrors the arguments of `write_note`; no doc comment, see `equivalence.rs`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct NoteArgs {
    /// The note's text.
    text: String,
}

/// Appends a note.
#[tool(
    name = "note-write",
    tags("notes", "mcp:local"),
    timeout = "1500ms",
    retries = 3,
    version = "1.2.0",
    mutating,
    needs_approval = false,
    cacheable,
    max_output = 1024,
    overflow = "spill",
    kind = "agent"
)]
async fn write_note(
    /// The note's text.
    text: String,
) -> String {
    text
}

#[test]
fn all_options_match_the_builder() {
    let expected = ToolSpec::builder("note-write")
        .description("Appends a note.")
        .parameters(schema_for::<NoteArgs>())
        .tags(["notes", "mcp:local"])
        .timeout(Duration::from_millis(1500))
        .retry(RetryPolicy::retries(3))
        .version("1.2.0")
        .mutating()
        .needs_approval(false)
        .cacheable(true)
        .max_output(1024, Overflow::Spill)
        .kind(ToolKind::Agent)
        .build()
        .unwrap();
    assert_eq!(WriteNoteTool.spec(), expected);
    assert!(
        !WriteNoteTool.spec().policy.parallel,
        "mutating tools run serially"
    );
}

#[tool(
    description = "Says hi.",
    read_only,
    parallel = false,
    overflow = "fail",
    discover = false
)]
async fn hi() -> &'static str {
    "hi"
}

#[test]
fn description_key_flags_and_default_output_cap() {
    let expected = ToolSpec::builder("hi")
        .description("Says hi.")
        .parameters(
            serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
        )
        .read_only()
        .parallel(false)
        .max_output(toolbelt_core::DEFAULT_MAX_OUTPUT_BYTES, Overflow::Fail)
        .build()
        .unwrap();
    assert_eq!(HiTool.spec(), expected);
}

/// Multi-paragraph docs are kept whole.
///
/// ```text
///     indented example
/// ```
///
/// Last paragraph.
#[tool(discover = false)]
async fn docs_kept() {}

#[test]
fn doc_comment_paragraphs_become_the_description() {
    let expected = "Multi-paragraph docs are kept whole.\n\n```text\n    indented example\n```\n\nLast paragraph.";
    assert_eq!(DocsKeptTool.spec().description, expected);
}

/// Mirrors the facade, which re-exports all of core at its root.
mod facade {
    pub(super) use toolbelt_core::*;
}

/// Reached through a re-export path.
#[tool(crate = "crate::attributes::facade", discover = false)]
async fn via_facade(n: u8) -> u32 {
    u32::from(n) * 2
}

#[tokio::test]
async fn crate_path_override_works_through_a_re_export() {
    let out = ViaFacadeTool
        .call(serde_json::json!({"n": 21}), facade::ToolContext::new())
        .await;
    assert_eq!(out.unwrap().text, "42");
    assert_eq!(ViaFacadeTool.spec().name, "via_facade");
}
