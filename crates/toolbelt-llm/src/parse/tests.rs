//! Unit tests for the pieces of the text tool-call parser.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

#[test]
fn call_object_detection_looks_at_the_first_key() {
    assert!(starts_call_object(r#"{"tool_calls": []}"#));
    assert!(starts_call_object("{ 'name' : 'x'}"));
    assert!(starts_call_object("{name: 'x'}"));
    assert!(!starts_call_object(r#"{"names": 1}"#));
    assert!(!starts_call_object(r#"{"a": {"name": 1}}"#));
}

#[test]
fn ids_are_kept_when_unique_and_made_up_otherwise() {
    let raw = |id: Option<&str>| RawCall {
        id: id.map(str::to_owned),
        name: "t".to_owned(),
        arguments: json!({}),
    };
    let calls = assign_ids(vec![
        raw(Some("a")),
        raw(None),
        raw(Some("a")),
        raw(Some("call_3")),
        raw(None),
    ]);
    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["a", "call_1", "call_2", "call_3", "call_4"]);
}

#[test]
fn made_up_ids_avoid_given_ones() {
    let calls = assign_ids(vec![
        RawCall {
            id: None,
            name: "t".to_owned(),
            arguments: json!({}),
        },
        RawCall {
            id: Some("call_0".to_owned()),
            name: "t".to_owned(),
            arguments: json!({}),
        },
    ]);
    assert_eq!(calls[0].id, "call_0_1");
    assert_eq!(calls[1].id, "call_0");
}

#[test]
fn native_arguments_are_decoded_repaired_or_kept_raw() {
    assert_eq!(decode_native_arguments(""), json!({}));
    assert_eq!(decode_native_arguments(r#"{"a": 1}"#), json!({"a": 1}));
    assert_eq!(decode_native_arguments("{'a': 1,}"), json!({"a": 1}));
    assert_eq!(
        decode_native_arguments(r#"{"a": 1"#),
        json!(r#"{"a": 1"#),
        "a cut-off object is not completed"
    );
}

#[test]
fn strip_fence_removes_the_wrapping_only() {
    assert_eq!(strip_fence("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
    assert_eq!(strip_fence("{\"a\": 1}"), "{\"a\": 1}");
}
