//! Retries, timeouts, rate limits and broken streams, for both clients.

use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_llm::{ChatProvider, ChatRequest, Message, OpenAiClient, ProviderError, StreamEvent};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    Reply, ScriptedServer, anthropic, anthropic_sse, collect, openai, openai_sse, quick_retry,
};

fn request() -> ChatRequest {
    ChatRequest::new(vec![Message::user("hi")])
}

fn ok_body() -> serde_json::Value {
    json!({"model": "m", "choices": [{"message": {"content": "hello"}, "finish_reason": "stop"}]})
}

/// A server answering the first `n` requests with `first`, then 200 `ok_body`.
async fn failing_then_ok(first: ResponseTemplate, n: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(first)
        .up_to_n_times(n)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(ok_body()))
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after_then_succeeds() {
    let limited = ResponseTemplate::new(429)
        .insert_header("retry-after", "1")
        .set_body_json(json!({"error": {"message": "slow down"}}));
    let server = failing_then_ok(limited, 1).await;
    let started = Instant::now();
    let answer = openai(&server.uri()).chat(request()).await.unwrap();
    assert_eq!(answer.content.as_deref(), Some("hello"));
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited {:?}",
        started.elapsed()
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn server_errors_are_retried() {
    let server = failing_then_ok(ResponseTemplate::new(500).set_body_string("boom"), 2).await;
    let answer = openai(&server.uri()).chat(request()).await.unwrap();
    assert_eq!(answer.content.as_deref(), Some("hello"));
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried_and_keep_the_message() {
    let bad = ResponseTemplate::new(400).set_body_json(json!({"error": {"message": "Invalid schema for function 'x'", "type": "invalid_request_error"}}));
    let server = failing_then_ok(bad, 1).await;
    let err = openai(&server.uri()).chat(request()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "openai API error 400: Invalid schema for function 'x'"
    );
    assert!(!err.is_retryable());
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn endless_rate_limits_end_as_rate_limited() {
    let limited = ResponseTemplate::new(429).insert_header("retry-after", "0");
    let server = failing_then_ok(limited, 100).await;
    let err = openai(&server.uri()).chat(request()).await.unwrap_err();
    assert!(
        matches!(err, ProviderError::RateLimited { retry_after: Some(d), .. } if d.is_zero()),
        "{err}"
    );
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        3,
        "first try + 2 retries"
    );
}

#[tokio::test]
async fn retry_after_beyond_the_limit_is_not_waited_out() {
    let limited = ResponseTemplate::new(429).insert_header("retry-after", "3600");
    let server = failing_then_ok(limited, 1).await;
    let err = anthropic(&server.uri()).chat(request()).await.unwrap_err();
    let want = "rate limited by anthropic; retry after 3600s";
    assert_eq!(err.to_string(), want);
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn slow_answers_time_out() {
    let slow = ResponseTemplate::new(200)
        .set_body_json(ok_body())
        .set_delay(Duration::from_secs(3));
    let server = failing_then_ok(slow, 10).await;
    let client = OpenAiClient::builder()
        .base_url(server.uri())
        .model("m")
        .timeout(Duration::from_millis(200))
        .retry(quick_retry(1))
        .build()
        .unwrap();
    let err = client.chat(request()).await.unwrap_err();
    assert!(
        matches!(err, ProviderError::Timeout { after, .. } if after == Duration::from_millis(200)),
        "{err}"
    );
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        2,
        "timeouts are retried"
    );
}

#[tokio::test]
async fn unreachable_server_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let err = openai(&url).chat(request()).await.unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::Transport {
                provider: "openai",
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().starts_with("could not reach openai"),
        "{err}"
    );
    assert!(!err.suggests_no_stream());
}

fn text_stream() -> String {
    let chunk = |t: &str| json!({"choices": [{"index": 0, "delta": {"content": t}}]});
    openai_sse(&[chunk("one "), chunk("two "), chunk("three")])
}

#[tokio::test]
async fn mid_stream_disconnect_says_the_stream_ended_after_200() {
    let mut reply = Reply::sse(text_stream(), &[20]);
    reply.cut_after = Some(70);
    let server = ScriptedServer::start(vec![reply]).await;
    let stream = openai(&server.url).chat_stream(request()).await.unwrap();
    let mut items = collect(stream).await;
    let err = items.pop().unwrap().unwrap_err();
    assert!(matches!(err, ProviderError::StreamEnded { .. }), "{err}");
    assert!(err.suggests_no_stream());
    assert_eq!(
        items.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
        [StreamEvent::TextDelta("one ".into())]
    );
}

#[tokio::test]
async fn stream_ending_without_its_end_marker_is_an_error() {
    let events = [
        json!({"type": "message_start", "message": {"model": "m", "usage": {}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "partial"}}),
    ];
    let server = ScriptedServer::start(vec![Reply::sse(anthropic_sse(&events), &[64])]).await;
    let stream = anthropic(&server.url).chat_stream(request()).await.unwrap();
    let err = collect(stream).await.pop().unwrap().unwrap_err();
    assert_eq!(
        err.to_string(),
        "anthropic answered 200 but the stream ended before the answer was complete: the \
         server closed it without an end marker or a finish reason"
    );
}

#[tokio::test]
async fn stalled_stream_times_out_instead_of_hanging() {
    let mut reply = Reply::sse(text_stream(), &[10]);
    reply.stall_after = Some(30);
    let server = ScriptedServer::start(vec![reply]).await;
    let client = OpenAiClient::builder()
        .base_url(&server.url)
        .model("m")
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let stream = client.chat_stream(request()).await.unwrap();
    let err = collect(stream).await.pop().unwrap().unwrap_err();
    assert!(matches!(err, ProviderError::Timeout { .. }), "{err}");
}

#[tokio::test]
async fn stream_setup_is_retried_on_rate_limits() {
    let mut limited = Reply::sse("{\"error\": {\"message\": \"busy\"}}", &[100]);
    limited.status = 429;
    limited.headers.push(("retry-after".into(), "0".into()));
    let server = ScriptedServer::start(vec![limited, Reply::sse(text_stream(), &[5])]).await;
    let stream = openai(&server.url).chat_stream(request()).await.unwrap();
    let last = collect(stream).await.pop().unwrap().unwrap();
    assert!(
        matches!(last, StreamEvent::Completed(r) if r.content.as_deref() == Some("one two three"))
    );
    assert_eq!(server.bodies().len(), 2);
}
