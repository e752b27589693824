//! Link-time discovery collects `#[tool]`s from this crate and from `toolbelt-testkit`.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{Executor, Registry, ToolCall, ToolContext};
use toolbelt_macros::tool;

/// Counts the words in a text.
#[tool(tags("local"))]
async fn word_count(text: String) -> usize {
    text.split_whitespace().count()
}

fn names(registry: &Registry, tag: &str) -> Vec<String> {
    registry
        .tools_by_tag(tag)
        .iter()
        .map(|t| t.name().to_string())
        .collect()
}

#[test]
fn discovered_holds_tools_of_both_crates() {
    let registry = Registry::discovered().unwrap();
    assert_eq!(
        names(&registry, "testkit"),
        ["testkit_add", "testkit_echo", "testkit_greet"]
    );
    assert_eq!(names(&registry, "local"), ["word_count"]);
    assert!(registry.contains("file_read") && registry.contains("note-write"));
}

#[test]
fn discover_false_keeps_a_tool_out() {
    let registry = Registry::discovered().unwrap();
    for hidden in ["hi", "docs_kept", "via_facade", "resolve", "divide"] {
        assert!(
            !registry.contains(hidden),
            "{hidden} should not be discovered"
        );
    }
}

#[tokio::test]
async fn a_discovered_tool_from_another_crate_runs() {
    let tools = Registry::discovered().unwrap().select("testkit").unwrap();
    let call = ToolCall::new("1", "testkit_add", json!({"a": 2, "b": 40}));
    let result = Executor::new()
        .execute(&tools, call, &ToolContext::new())
        .await;
    assert_eq!(result.outcome.unwrap().json, Some(json!({"sum": 42})));
}

#[tokio::test]
async fn a_discovered_tool_from_this_crate_runs() {
    let tools = Registry::discovered().unwrap().select("local").unwrap();
    let call = ToolCall::new("1", "word_count", json!({"text": "one two three"}));
    let result = Executor::new()
        .execute(&tools, call, &ToolContext::new())
        .await;
    assert_eq!(result.outcome.unwrap().text, "3");
}
