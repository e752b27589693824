//! The provider name mapping: safe names kept, others sanitised, hashed only when needed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;
use toolbelt_core::{ToolCall, is_provider_safe};

use super::NameMap;
use crate::message::Message;
use crate::request::{ChatRequest, ChatResponse, ToolChoice, ToolSchema};

fn schema(name: &str) -> ToolSchema {
    ToolSchema {
        name: name.to_owned(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    }
}

#[test]
fn safe_names_are_unchanged_and_dots_become_underscores() {
    let map = NameMap::new([
        "file_read",
        "github.create_issue",
        "weather/get",
        "Get Weather",
    ]);
    assert_eq!(map.to_provider("file_read"), "file_read");
    assert_eq!(
        map.to_provider("github.create_issue"),
        "github_create_issue"
    );
    assert_eq!(map.to_provider("weather/get"), "weather_get");
    assert_eq!(map.to_provider("Get Weather"), "Get_Weather");
    assert!(NameMap::new(["a", "b-c"]).is_identity());
}

#[test]
fn a_collision_gets_a_hash_suffix_and_the_safe_name_keeps_its_own() {
    let map = NameMap::new(["a.b", "a_b", "a/b"]);
    assert_eq!(map.to_provider("a_b"), "a_b");
    let dot = map.to_provider("a.b");
    let slash = map.to_provider("a/b");
    assert!(dot.starts_with("a_b_") && dot.len() == 3 + 1 + 10, "{dot}");
    assert!(slash.starts_with("a_b_") && slash != dot, "{slash}");
    assert_eq!(map.from_provider(dot), "a.b");
    assert_eq!(map.from_provider(slash), "a/b");
}

#[test]
fn long_names_are_cut_to_64_bytes_with_a_hash() {
    let long = format!("server.{}", "x".repeat(100));
    let map = NameMap::new([long.as_str()]);
    let mapped = map.to_provider(&long);
    assert_eq!(mapped.len(), 64);
    assert!(is_provider_safe(mapped));
    assert_eq!(map.from_provider(mapped), long);
}

#[test]
fn the_mapping_does_not_depend_on_order() {
    let a = NameMap::new(["x.y", "x_y", "é.t", "z"]);
    let b = NameMap::new(["z", "é.t", "x_y", "x.y", "x.y"]);
    assert_eq!(a, b);
}

#[test]
fn a_request_maps_tools_history_results_and_choice_and_the_answer_maps_back() {
    let call = ToolCall::new("c1", "github.create_issue", json!({}));
    let request = ChatRequest::new(vec![
        Message::user("file it"),
        Message::assistant_tool_calls(None, vec![call.clone()]),
        Message::tool_result("c1", "github.create_issue", "done", false),
    ])
    .with_tools(vec![schema("github.create_issue"), schema("file_read")])
    .with_tool_choice(ToolChoice::Tool("github.create_issue".to_owned()));
    let map = NameMap::for_request(&request);
    let sent = map.map_request(request);
    let expected = ChatRequest::new(vec![
        Message::user("file it"),
        Message::assistant_tool_calls(
            None,
            vec![ToolCall::new("c1", "github_create_issue", json!({}))],
        ),
        Message::tool_result("c1", "github_create_issue", "done", false),
    ])
    .with_tools(vec![schema("github_create_issue"), schema("file_read")])
    .with_tool_choice(ToolChoice::Tool("github_create_issue".to_owned()));
    assert_eq!(sent, expected);
    let answer = ChatResponse::tool_calls(vec![
        ToolCall::new("c2", "github_create_issue", json!({"title": "t"})),
        ToolCall::new("c3", "unknown_tool", json!({})),
    ]);
    let back = map.unmap_response(answer);
    let names: Vec<&str> = back.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["github.create_issue", "unknown_tool"]);
}

proptest! {
    #[test]
    fn every_mapping_is_safe_unique_and_reversible(
        names in proptest::collection::vec("[a-c._/ é-]{1,80}", 1..12)
    ) {
        let names: Vec<String> = names
            .into_iter()
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty())
            .collect();
        let map = NameMap::new(&names);
        let mut seen = HashSet::new();
        for name in &names {
            let mapped = map.to_provider(name);
            prop_assert!(is_provider_safe(mapped), "{mapped:?}");
            prop_assert_eq!(map.from_provider(mapped), name.as_str());
            seen.insert((name.clone(), mapped.to_owned()));
        }
        let distinct_real: HashSet<_> = seen.iter().map(|(r, _)| r).collect();
        let distinct_mapped: HashSet<_> = seen.iter().map(|(_, m)| m).collect();
        prop_assert_eq!(distinct_real.len(), distinct_mapped.len());
    }
}
