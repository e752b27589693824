//! Arguments are validated against the schema before a tool runs; errors carry JSON pointers.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{Executor, FnTool, ToolCall, ToolContext, ToolError, Toolset, Violation};

fn toolset() -> Toolset {
    let tool = FnTool::builder("send_mail")
        .description("Send an email")
        .parameters(json!({
            "type": "object",
            "properties": {
                "to": {"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 1},
                "priority": {"enum": ["low", "normal", "high"]},
                "body": {"type": "string"}
            },
            "required": ["to", "body"],
            "additionalProperties": false
        }))
        .handler(|_args, _ctx| async { "sent" })
        .unwrap();
    Toolset::from_tools([tool])
}

async fn violations(args: serde_json::Value) -> Vec<Violation> {
    let result = Executor::new()
        .execute(
            &toolset(),
            ToolCall::new("1", "send_mail", args),
            &ToolContext::new(),
        )
        .await;
    match result.outcome {
        Err(ToolError::InvalidArguments { violations }) => violations,
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

#[tokio::test]
async fn pointers_name_the_offending_values() {
    let v = violations(json!({"to": ["a@b.c", 7], "priority": "urgent", "body": "hi"})).await;
    let pointers: Vec<&str> = v.iter().map(|v| v.pointer.as_str()).collect();
    assert_eq!(pointers, ["/priority", "/to/1"]);
    assert_eq!(v[1].schema_path, "/properties/to/items/type");
    assert!(
        v[0].message.contains(r#""low", "normal" or "high""#) || v[0].message.contains("low"),
        "{}",
        v[0].message
    );
}

#[tokio::test]
async fn missing_and_extra_properties_are_reported_at_the_root() {
    let v = violations(json!({"to": ["a@b.c"], "cc": "x"})).await;
    let mut found: Vec<String> = v
        .iter()
        .map(|v| format!("{} {}: {}", v.pointer, v.schema_path, v.message))
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            " /additionalProperties: unknown argument `cc`; the arguments are `body`, `priority`, `to`",
            " /required: \"body\" is a required property",
        ]
    );
}

#[tokio::test]
async fn the_model_reads_a_corrective_message() {
    let result = Executor::new()
        .execute(
            &toolset(),
            ToolCall::new("1", "send_mail", json!({"to": [], "body": 1})),
            &ToolContext::new(),
        )
        .await;
    let text = result.to_model_text();
    assert!(
        text.starts_with("error: invalid arguments: at /body: 1 is not of type \"string\""),
        "{text}"
    );
    assert!(
        text.ends_with("Fix the arguments and call the tool again."),
        "{text}"
    );
    assert_eq!(result.attempts, 0, "the tool never ran");
}

/// A provider keeps arguments that did not parse as a JSON string (Qwen2.5-Coder-1.5B
/// wrote `{"to": ["a@b.c"], "body": "hi` and stopped); the model is told what it wrote, why
/// it could not be read, and which arguments the object needs.
#[tokio::test]
async fn arguments_that_are_not_json_are_quoted_with_the_reason() {
    let v = violations(json!(r#"{"to": ["a@b.c"], "body": "hi"#)).await;
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].pointer, "");
    assert_eq!(
        v[0].message,
        "the arguments `{\"to\": [\"a@b.c\"], \"body\": \"hi` could not be read: they are not \
         valid JSON (EOF while parsing a string at line 1 column 29); send them as one JSON \
         object, {\"to\": …, \"body\": …}"
    );
    // Arguments encoded twice, and JSON that is not an object, say so.
    let twice = violations(json!(r#"{"to": ["a@b.c"], "body": "hi"}"#)).await;
    assert!(
        twice[0]
            .message
            .contains("could not be read: they are an object written inside a JSON string;"),
        "{}",
        twice[0].message
    );
    let array = violations(json!("[1, 2]")).await;
    assert!(
        array[0]
            .message
            .contains("could not be read: they are a JSON array, not an object;"),
        "{}",
        array[0].message
    );
    let long = "x".repeat(500);
    let v = violations(json!(long)).await;
    assert!(
        v[0].message.contains(&format!("`{}…`", "x".repeat(200))),
        "{}",
        v[0].message
    );
}
