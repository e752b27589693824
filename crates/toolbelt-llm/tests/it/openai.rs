//! The OpenAI-compatible client against a local server speaking the chat-completions wire format.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::ToolCall;
use toolbelt_llm::{
    ChatProvider, ChatRequest, ChatResponse, FinishReason, Message, OpenAiClient, ProviderError,
    StreamEvent, ToolChoice, ToolSchema, Usage, unparsed_arguments,
};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Reply, ScriptedServer, collect, openai, openai_sse};

fn weather_tool() -> ToolSchema {
    ToolSchema {
        name: "weather".into(),
        description: "Weather for a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"$ref": "#/$defs/City"}},
            "required": ["city"], "$defs": {"City": {"type": "string"}}}),
    }
}

fn conversation() -> Vec<Message> {
    vec![
        Message::system("Be brief."),
        Message::user("Weather in Paris and Rome?"),
        Message::assistant_tool_calls(
            None,
            vec![
                ToolCall::new("c1", "weather", json!({"city": "Paris"})),
                ToolCall::new("c2", "weather", json!("{\"city\": ")),
            ],
        ),
        Message::tool_result("c1", "weather", "sunny", false),
        Message::tool_result("c2", "weather", "error: bad arguments", true),
    ]
}

async fn mock_completion(body: Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .and(header("authorization", "Bearer sk-test"))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(&server)
        .await;
    server
}

fn completion(message: Value, finish: &str) -> Value {
    json!({"id": "x", "model": "gpt-test-1", "choices": [{"index": 0, "message": message,
        "finish_reason": finish}], "usage": {"prompt_tokens": 12, "completion_tokens": 7}})
}

#[tokio::test]
async fn request_body_carries_messages_tools_and_choice() {
    let server = mock_completion(completion(json!({"content": "ok"}), "stop")).await;
    let mut request = ChatRequest::new(conversation())
        .with_tools(vec![weather_tool()])
        .with_tool_choice(ToolChoice::Tool("weather".into()));
    request.parallel_tool_calls = Some(false);
    request.temperature = Some(0.2);
    request.max_tokens = Some(100);
    openai(&server.uri()).chat(request).await.unwrap();
    let sent: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    let want = json!({
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
                // Arguments that did not parse go back as `{}` (llama-server refuses a
                // history whose arguments do not parse); the tool result says what was wrong.
                {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "c2", "content": "error: bad arguments"},
        ],
        "tools": [{"type": "function", "function": {"name": "weather", "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
        "tool_choice": {"type": "function", "function": {"name": "weather"}},
        "parallel_tool_calls": false,
        "temperature": 0.2,
        "max_tokens": 100,
    });
    assert_eq!(sent, want);
}

#[tokio::test]
async fn tool_choice_maps_to_openai_values_and_is_omitted_without_tools() {
    let server = mock_completion(completion(json!({"content": "ok"}), "stop")).await;
    let client = openai(&server.uri());
    let base = ChatRequest::new(vec![Message::user("hi")]);
    for choice in [ToolChoice::Auto, ToolChoice::None, ToolChoice::Required] {
        let request = base
            .clone()
            .with_tools(vec![weather_tool()])
            .with_tool_choice(choice);
        client.chat(request).await.unwrap();
    }
    client
        .chat(base.with_tool_choice(ToolChoice::Required))
        .await
        .unwrap();
    let sent: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| {
            r.body_json::<Value>()
                .unwrap()
                .get("tool_choice")
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect();
    assert_eq!(
        sent,
        [json!("auto"), json!("none"), json!("required"), Value::Null]
    );
}

#[tokio::test]
async fn parallel_tool_calls_come_back_in_order_with_usage() {
    let calls = json!([
        {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}}]);
    let server = mock_completion(completion(
        json!({"content": null, "tool_calls": calls}),
        "tool_calls",
    ))
    .await;
    let answer = openai(&server.uri())
        .chat(ChatRequest::new(conversation()))
        .await
        .unwrap();
    let mut want = ChatResponse::tool_calls(vec![
        ToolCall::new("call_a", "weather", json!({"city": "Paris"})),
        ToolCall::new("call_b", "weather", json!({"city": "Rome"})),
    ]);
    want.usage = Usage {
        input_tokens: 12,
        output_tokens: 7,
    };
    want.model = "gpt-test-1".into();
    assert_eq!(answer, want);
}

#[tokio::test]
async fn malformed_arguments_are_kept_raw_for_the_agent() {
    let calls = json!([{"id": "c", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Par"}}]);
    let server = mock_completion(completion(json!({"tool_calls": calls}), "tool_calls")).await;
    let answer = openai(&server.uri())
        .chat(ChatRequest::new(conversation()))
        .await
        .unwrap();
    assert_eq!(
        unparsed_arguments(&answer.tool_calls[0]),
        Some("{\"city\": \"Par")
    );
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
}

#[tokio::test]
async fn strict_mode_marks_only_tools_whose_schema_allows_it() {
    let server = mock_completion(completion(json!({"content": "ok"}), "stop")).await;
    let client = OpenAiClient::builder()
        .base_url(server.uri())
        .api_key("sk-test")
        .model("m")
        .strict_tools(true)
        .build()
        .unwrap();
    let map_tool = ToolSchema {
        name: "tag".into(),
        description: "Tags".into(),
        parameters: json!({"type": "object", "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}}}),
    };
    let request =
        ChatRequest::new(vec![Message::user("hi")]).with_tools(vec![weather_tool(), map_tool]);
    client.chat(request).await.unwrap();
    let sent: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(sent["tools"][0]["function"]["strict"], json!(true));
    assert_eq!(
        sent["tools"][0]["function"]["parameters"]["additionalProperties"],
        json!(false)
    );
    assert_eq!(sent["tools"][1]["function"].get("strict"), None);
}

#[tokio::test]
async fn too_many_tools_are_refused_before_sending() {
    let server = MockServer::start().await;
    let tools = (0..129)
        .map(|i| ToolSchema {
            name: format!("t{i}"),
            ..weather_tool()
        })
        .collect();
    let request = ChatRequest::new(vec![Message::user("hi")]).with_tools(tools);
    let err = openai(&server.uri()).chat(request).await.unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::TooManyTools {
                count: 129,
                max: 128,
                ..
            }
        ),
        "{err}"
    );
    assert!(server.received_requests().await.unwrap().is_empty());
}

fn stream_chunks() -> Vec<Value> {
    let delta = |d: Value| json!({"id": "s", "model": "gpt-test-1", "choices": [{"index": 0, "delta": d, "finish_reason": null}]});
    let call = |i: usize, id: Option<&str>, name: Option<&str>, args: &str| {
        delta(
            json!({"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": args}}]}),
        )
    };
    vec![
        delta(json!({"role": "assistant", "content": "Héllo 世界 🌍, "})),
        call(0, Some("call_a"), Some("weather"), ""),
        call(0, None, None, "{\"city\""),
        call(1, Some("call_b"), Some("weather"), "{\"ci"),
        call(0, None, None, ": \"Zürich\"}"),
        call(1, None, None, "ty\": \"Rome\"}"),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 9}}),
    ]
}

fn expected_stream_answer() -> ChatResponse {
    let mut want = ChatResponse::tool_calls(vec![
        ToolCall::new("call_a", "weather", json!({"city": "Zürich"})),
        ToolCall::new("call_b", "weather", json!({"city": "Rome"})),
    ]);
    want.content = Some("Héllo 世界 🌍, ".into());
    want.usage = Usage {
        input_tokens: 3,
        output_tokens: 9,
    };
    want.model = "gpt-test-1".into();
    want
}

#[tokio::test]
async fn stream_split_at_every_byte_assembles_text_and_parallel_calls() {
    let server = ScriptedServer::start(vec![Reply::sse(openai_sse(&stream_chunks()), &[1])]).await;
    let stream = openai(&server.url)
        .chat_stream(ChatRequest::new(conversation()))
        .await
        .unwrap();
    let events: Vec<StreamEvent> = collect(stream)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Héllo 世界 🌍, ");
    let started: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStarted { index, id, .. } => Some((*index, id.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(started, [(0, "call_a"), (1, "call_b")]);
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Completed(expected_stream_answer()))
    );
    assert_eq!(
        server.bodies()[0]["stream_options"],
        json!({"include_usage": true})
    );
}

#[tokio::test]
async fn stream_survives_any_chunking_and_crlf_line_ends() {
    let crlf = openai_sse(&stream_chunks()).replace('\n', "\r\n");
    for (body, sizes) in [
        (openai_sse(&stream_chunks()), vec![2, 3, 5, 7]),
        (crlf, vec![1, 13, 64]),
    ] {
        // A pause between pieces makes them separate TCP segments too.
        let mut reply = Reply::sse(body, &sizes);
        reply.delay = std::time::Duration::from_millis(1);
        let server = ScriptedServer::start(vec![reply]).await;
        let stream = openai(&server.url)
            .chat_stream(ChatRequest::new(conversation()))
            .await
            .unwrap();
        let last = collect(stream).await.pop().unwrap().unwrap();
        assert_eq!(
            last,
            StreamEvent::Completed(expected_stream_answer()),
            "sizes {sizes:?}"
        );
    }
}

#[tokio::test]
async fn stream_error_chunk_becomes_an_api_error() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
                data: {\"error\":{\"code\":502,\"message\":\"upstream provider failed\"}}\n\n";
    let server = ScriptedServer::start(vec![Reply::sse(body, &[17])]).await;
    let stream = openai(&server.url)
        .chat_stream(ChatRequest::new(conversation()))
        .await
        .unwrap();
    let items = collect(stream).await;
    assert_eq!(
        items[0].as_ref().unwrap(),
        &StreamEvent::TextDelta("Hi".into())
    );
    let err = items[1].as_ref().unwrap_err();
    assert!(
        matches!(err, ProviderError::Api { status: 502, message, .. } if message == "upstream provider failed"),
        "{err}"
    );
    assert_eq!(items.len(), 2);
}

#[tokio::test]
async fn streamed_malformed_arguments_are_kept_raw() {
    let chunks = [
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c",
        "function": {"name": "weather", "arguments": "{\"city\": Paris"}}]}, "finish_reason": "tool_calls"}]}),
    ];
    let server = ScriptedServer::start(vec![Reply::sse(openai_sse(&chunks), &[9])]).await;
    let stream = openai(&server.url)
        .chat_stream(ChatRequest::new(conversation()))
        .await
        .unwrap();
    let Some(Ok(StreamEvent::Completed(answer))) = collect(stream).await.pop() else {
        panic!("no answer")
    };
    assert_eq!(
        unparsed_arguments(&answer.tool_calls[0]),
        Some("{\"city\": Paris")
    );
}

#[tokio::test]
async fn servers_that_ignore_stream_are_replayed_as_a_stream() {
    let calls = json!([{"id": "c", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]);
    let server = mock_completion(completion(
        json!({"content": "Checking.", "tool_calls": calls}),
        "tool_calls",
    ))
    .await;
    let stream = openai(&server.uri())
        .chat_stream(ChatRequest::new(conversation()))
        .await
        .unwrap();
    let events: Vec<StreamEvent> = collect(stream)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        events[..3],
        [
            StreamEvent::TextDelta("Checking.".into()),
            StreamEvent::ToolCallStarted {
                index: 0,
                id: "c".into(),
                name: "weather".into()
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "{\"city\":\"Oslo\"}".into()
            },
        ]
    );
    let StreamEvent::Completed(answer) = &events[3] else {
        panic!("no answer: {events:?}")
    };
    assert_eq!(
        answer.tool_calls,
        [ToolCall::new("c", "weather", json!({"city": "Oslo"}))]
    );
}

#[tokio::test]
async fn scripted_server_really_delivers_the_pieces_apart() {
    use futures::StreamExt;
    let server = ScriptedServer::start(vec![Reply::sse("data: é\n\n", &[1])]).await;
    let response = reqwest::Client::new()
        .post(&server.url)
        .body("{}")
        .send()
        .await
        .unwrap();
    let pieces: Vec<_> = response.bytes_stream().map(Result::unwrap).collect().await;
    assert_eq!(
        pieces.len(),
        "data: é\n\n".len(),
        "one piece per byte, é split in two"
    );
}

#[tokio::test]
async fn error_objects_sent_with_status_200_are_reported() {
    let server =
        mock_completion(json!({"error": {"message": "No endpoints found for m", "code": 404}}))
            .await;
    let err = openai(&server.uri())
        .chat(ChatRequest::new(conversation()))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not decode openai's answer: the answer is an error: No endpoints found for m"
    );
}
