//! Tool names a provider refuses (`github.create_issue`) go out mapped and come back real (ADR 0007).

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::ToolCall;
use toolbelt_llm::{ChatProvider, ChatRequest, Message, StreamEvent, ToolSchema};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Reply, ScriptedServer, anthropic, anthropic_sse, collect, openai};

fn request() -> ChatRequest {
    let tool = |name: &str| ToolSchema {
        name: name.to_owned(),
        description: "d".to_owned(),
        parameters: json!({"type": "object", "properties": {}}),
    };
    ChatRequest::new(vec![
        Message::user("file two issues"),
        Message::assistant_tool_calls(
            None,
            vec![ToolCall::new("c1", "github.create_issue", json!({}))],
        ),
        Message::tool_result("c1", "github.create_issue", "#1", false),
    ])
    .with_tools(vec![tool("github.create_issue"), tool("file_read")])
}

#[tokio::test]
async fn openai_sends_safe_names_and_returns_the_real_one() {
    let server = MockServer::start().await;
    let answer = json!({"id": "x", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"tool_calls": [{"id": "c2", "type": "function",
            "function": {"name": "github_create_issue", "arguments": "{}"}}]}}]});
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&server)
        .await;
    let response = openai(&server.uri()).chat(request()).await.unwrap();
    assert_eq!(response.tool_calls[0].name, "github.create_issue");
    let sent: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    let tool_names: Vec<&Value> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["function"]["name"])
        .collect();
    assert_eq!(
        tool_names,
        [&json!("github_create_issue"), &json!("file_read")]
    );
    assert_eq!(
        sent["messages"][1]["tool_calls"][0]["function"]["name"],
        json!("github_create_issue")
    );
}

#[tokio::test]
async fn anthropic_stream_returns_the_real_name_in_every_event() {
    let events = vec![
        json!({"type": "message_start", "message": {"id": "m", "model": "claude-test", "content": [],
            "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use",
            "id": "toolu_1", "name": "github_create_issue", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ];
    let server = ScriptedServer::start(vec![Reply::sse(anthropic_sse(&events), &[64])]).await;
    let stream = anthropic(&server.url).chat_stream(request()).await.unwrap();
    let events: Vec<StreamEvent> = collect(stream)
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    let started = events.iter().find_map(|e| match e {
        StreamEvent::ToolCallStarted { name, .. } => Some(name.clone()),
        _ => None,
    });
    assert_eq!(started.as_deref(), Some("github.create_issue"));
    let Some(StreamEvent::Completed(done)) = events.last() else {
        panic!("no completed event: {events:?}");
    };
    assert_eq!(done.tool_calls[0].name, "github.create_issue");
    let sent = &server.bodies()[0];
    assert_eq!(sent["tools"][0]["name"], json!("github_create_issue"));
    assert_eq!(
        sent["messages"][1]["content"][0]["name"],
        json!("github_create_issue")
    );
}
