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
