//! The Anthropic client against a local server speaking the Messages wire format.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::ToolCall;
use toolbelt_llm::{
    ChatProvider, ChatRequest, ChatResponse, Message, ProviderError, StreamEvent, ToolChoice,
    ToolSchema, Usage,
};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Reply, ScriptedServer, anthropic, anthropic_sse, collect};

fn search_tool() -> ToolSchema {
    ToolSchema {
        name: "search".into(),
        description: "Search the web".into(),
        parameters: json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Args",
            "type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": ["integer", "null"]}},
            "required": ["q"]}),
    }
}

async fn mock_messages(status: u16, body: Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "ak-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ResponseTemplate::new(status).set_body_json(body))
        .mount(&server)
        .await;
    server
}

fn answer_body() -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-1",
        "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Searching."},
            {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "rust"}},
            {"type": "tool_use", "id": "toolu_2", "name": "search", "input": {"q": "tokio", "limit": 3}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 20}})
}

#[tokio::test]
async fn request_body_hoists_system_and_merges_tool_results() {
    let server = mock_messages(200, answer_body()).await;
    let mut request = ChatRequest::new(vec![
        Message::system("Be brief."),
        Message::user("Find rust and tokio"),
        Message::assistant_tool_calls(
            Some("Sure.".into()),
            vec![
                ToolCall::new("toolu_1", "search", json!({"q": "rust"})),
                ToolCall::new("toolu_2", "search", json!({"q": "tokio"})),
            ],
        ),
        Message::tool_result("toolu_1", "search", "found rust", false),
        Message::tool_result("toolu_2", "search", "timed out", true),
        Message::user("Thanks"),
        Message::system("Answer in French."),
    ])
    .with_tools(vec![search_tool()])
    .with_tool_choice(ToolChoice::Required);
    request.parallel_tool_calls = Some(false);
    request.temperature = Some(0.5);
    anthropic(&server.uri()).chat(request).await.unwrap();
    let sent: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    let want = json!({
        "model": "claude-test", "max_tokens": 4096, "temperature": 0.5,
        "system": "Be brief.\n\nAnswer in French.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Find rust and tokio"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Sure."},
                {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "rust"}},
                {"type": "tool_use", "id": "toolu_2", "name": "search", "input": {"q": "tokio"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "found rust"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "timed out", "is_error": true},
                {"type": "text", "text": "Thanks"}]},
        ],
        "tools": [{"name": "search", "description": "Search the web", "input_schema": {"type": "object",
            "properties": {"q": {"type": "string"}, "limit": {"type": ["integer", "null"]}}, "required": ["q"]}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
    });
    assert_eq!(sent, want);
}

#[tokio::test]
async fn tool_choice_maps_to_anthropic_values() {
    let server = mock_messages(200, answer_body()).await;
    let client = anthropic(&server.uri());
    let choices = [
        ToolChoice::Auto,
        ToolChoice::None,
        ToolChoice::Tool("search".into()),
    ];
    for choice in choices {
        let request = ChatRequest::new(vec![Message::user("hi")]).with_tools(vec![search_tool()]);
        client.chat(request.with_tool_choice(choice)).await.unwrap();
    }
    let sent: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.body_json::<Value>().unwrap()["tool_choice"].clone())
        .collect();
    let want = [
        json!({"type": "auto"}),
        json!({"type": "none"}),
        json!({"type": "tool", "name": "search"}),
    ];
    assert_eq!(sent, want);
}

fn expected_answer() -> ChatResponse {
    let mut want = ChatResponse::tool_calls(vec![
        ToolCall::new("toolu_1", "search", json!({"q": "rust"})),
        ToolCall::new("toolu_2", "search", json!({"q": "tokio", "limit": 3})),
    ]);
    want.content = Some("Searching.".into());
    want.usage = Usage {
        input_tokens: 15,
        output_tokens: 20,
    };
    want.model = "claude-test-1".into();
    want
}

#[tokio::test]
async fn tool_use_blocks_become_calls_with_usage() {
    let server = mock_messages(200, answer_body()).await;
    let answer = anthropic(&server.uri())
        .chat(ChatRequest::new(vec![Message::user("x")]))
        .await
        .unwrap();
    assert_eq!(answer, expected_answer());
}

#[tokio::test]
async fn api_errors_carry_the_provider_message() {
    let body = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}});
    let server = mock_messages(400, body).await;
    let err = anthropic(&server.uri())
        .chat(ChatRequest::new(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "anthropic API error 400: max_tokens: too large"
    );
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "400 is not retried"
    );
}

fn stream_events() -> Vec<Value> {
    let delta = |i: usize, d: Value| json!({"type": "content_block_delta", "index": i, "delta": d});
    vec![
        json!({"type": "message_start", "message": {"id": "m", "model": "claude-test-1", "content": [],
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        delta(0, json!({"type": "text_delta", "text": "Search"})),
        delta(0, json!({"type": "text_delta", "text": "ing."})),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {}}}),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "{\"q\": \"ru"}),
        ),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "st\"}"}),
        ),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "search", "input": {}}}),
        delta(
            2,
            json!({"type": "input_json_delta", "partial_json": "{\"q\": \"tokio\", \"limit\": 3}"}),
        ),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}}),
        json!({"type": "message_stop"}),
    ]
}

#[tokio::test]
async fn stream_split_anywhere_assembles_text_and_tool_use() {
    for sizes in [vec![1], vec![3, 7, 2], vec![50]] {
        let server =
            ScriptedServer::start(vec![Reply::sse(anthropic_sse(&stream_events()), &sizes)]).await;
        let stream = anthropic(&server.url)
            .chat_stream(ChatRequest::new(vec![Message::user("x")]))
            .await
            .unwrap();
        let events: Vec<StreamEvent> = collect(stream)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(events[0], StreamEvent::TextDelta("Search".into()));
        assert_eq!(
            events[2],
            StreamEvent::ToolCallStarted {
                index: 0,
                id: "toolu_1".into(),
                name: "search".into()
            }
        );
        assert_eq!(
            events[3],
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "{\"q\": \"ru".into()
            }
        );
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Completed(expected_answer())),
            "sizes {sizes:?}"
        );
        assert_eq!(server.bodies()[0]["stream"], json!(true));
    }
}

#[tokio::test]
async fn stream_error_event_becomes_an_api_error() {
    let mut events = stream_events()[..4].to_vec();
    events.push(
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    let server = ScriptedServer::start(vec![Reply::sse(anthropic_sse(&events), &[11])]).await;
    let stream = anthropic(&server.url)
        .chat_stream(ChatRequest::new(vec![Message::user("x")]))
        .await
        .unwrap();
    let err = collect(stream).await.pop().unwrap().unwrap_err();
    assert!(
        matches!(&err, ProviderError::Api { status: 529, message, .. } if message == "Overloaded"),
        "{err}"
    );
    assert!(err.is_retryable());
}
