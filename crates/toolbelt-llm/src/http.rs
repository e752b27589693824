//! HTTP plumbing shared by the clients: retries, timeouts, error bodies and
//! the server-sent-event stream driver.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{Event, Eventsource};
use futures::{Stream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::error::ProviderError;
use crate::provider::{ChatStream, ProviderLimits};
use crate::request::{ChatRequest, ChatResponse, StreamEvent};
use crate::retry::{self, RetryConfig};

/// Most bytes of an error body kept when the provider's message cannot be found.
const MAX_RAW_ERROR: usize = 500;

/// A configured HTTP client for one provider.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub(crate) client: reqwest::Client,
    pub(crate) provider: &'static str,
    pub(crate) timeout: Duration,
    pub(crate) retry: RetryConfig,
}

/// What one failed attempt tells the retry loop.
struct Failure {
    error: ProviderError,
    retry_after: Option<Duration>,
}

impl From<ProviderError> for Failure {
    fn from(error: ProviderError) -> Self {
        Self {
            error,
            retry_after: None,
        }
    }
}

impl Transport {
    /// Posts `body` and returns the whole successful answer body, retrying per
    /// [`RetryConfig`]; each attempt (send and read) is bounded by the timeout.
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Bytes, ProviderError> {
        self.with_retries(|| async {
            let response = self.send(url, headers, body.clone()).await?;
            response
                .bytes()
                .await
                .map_err(|e| Failure::from(self.transport_error(&e)))
        })
        .await
    }

    /// Posts `body` and returns the successful response once its headers
    /// arrived; the body is left to stream.
    pub(crate) async fn post_streaming(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<reqwest::Response, ProviderError> {
        self.with_retries(|| self.send(url, headers, body.clone()))
            .await
    }

    async fn with_retries<T, F, Fut>(&self, mut attempt: F) -> Result<T, ProviderError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let mut retry = 0;
        loop {
            let outcome = match tokio::time::timeout(self.timeout, attempt()).await {
                Ok(outcome) => outcome,
                Err(_) => Err(Failure::from(ProviderError::Timeout {
                    provider: self.provider,
                    after: self.timeout,
                })),
            };
            let failure = match outcome {
                Ok(value) => return Ok(value),
                Err(failure) => failure,
            };
            if !failure.error.is_retryable() || retry >= self.retry.max_retries {
                return Err(self.final_error(failure));
            }
            let Some(wait) = self.retry.wait_for(retry, failure.retry_after) else {
                return Err(self.final_error(failure));
            };
            tracing::warn!(
                provider = self.provider,
                error = %failure.error,
                retry = retry + 1,
                wait_ms = wait.as_millis() as u64,
                "retrying chat request"
            );
            tokio::time::sleep(wait).await;
            retry += 1;
        }
    }

    /// A 429 that is given up on becomes [`ProviderError::RateLimited`].
    fn final_error(&self, failure: Failure) -> ProviderError {
        match failure.error {
            ProviderError::Api { status: 429, .. } => ProviderError::RateLimited {
                provider: self.provider,
                retry_after: failure.retry_after,
            },
            other => other,
        }
    }

    async fn send(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<reqwest::Response, Failure> {
        let response = self
            .client
            .post(url)
            .headers(headers.clone())
            .body(body)
            .send()
            .await
            .map_err(|e| Failure::from(self.transport_error(&e)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry::retry_after(response.headers());
        let body = response.bytes().await.unwrap_or_default();
        Err(Failure {
            error: self.api_error(status, &body),
            retry_after,
        })
    }

    /// An error status with the provider's own message.
    pub(crate) fn api_error(&self, status: StatusCode, body: &[u8]) -> ProviderError {
        ProviderError::Api {
            provider: self.provider,
            status: status.as_u16(),
            message: error_message(body).unwrap_or_else(|| {
                status
                    .canonical_reason()
                    .unwrap_or("no message")
                    .to_lowercase()
            }),
        }
    }

    pub(crate) fn transport_error(&self, error: &reqwest::Error) -> ProviderError {
        if error.is_timeout() {
            return ProviderError::Timeout {
                provider: self.provider,
                after: self.timeout,
            };
        }
        ProviderError::Transport {
            provider: self.provider,
            message: error_chain(error),
        }
    }

    pub(crate) fn decode_error(&self, message: impl std::fmt::Display) -> ProviderError {
        ProviderError::Decode {
            provider: self.provider,
            message: message.to_string(),
        }
    }
}

/// Parses a whole (non-streamed) answer body of one provider's wire format.
pub(crate) type ParseResponse = fn(&[u8]) -> Result<ChatResponse, String>;

/// One chat endpoint: where requests go and how, shared by both clients so the
/// send / stream / replay logic exists once.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) transport: Transport,
    pub(crate) url: String,
    pub(crate) headers: HeaderMap,
    pub(crate) limits: ProviderLimits,
    /// Whether `chat_stream` really streams; off, it sends a plain request and
    /// replays the answer as a stream.
    pub(crate) stream: bool,
}

impl Endpoint {
    /// Checks the tool count and serialises a wire body built for `request`.
    pub(crate) fn encode(
        &self,
        request: &ChatRequest,
        body: &Value,
    ) -> Result<Bytes, ProviderError> {
        check_tool_count(self.transport.provider, request, self.limits)?;
        serde_json::to_vec(body).map(Bytes::from).map_err(|e| {
            self.transport
                .decode_error(format!("could not encode the request: {e}"))
        })
    }

    /// Sends `body` and parses the whole answer.
    pub(crate) async fn chat(
        &self,
        body: Bytes,
        parse: ParseResponse,
    ) -> Result<ChatResponse, ProviderError> {
        let bytes = self.transport.post(&self.url, &self.headers, body).await?;
        parse(&bytes).map_err(|e| self.transport.decode_error(e))
    }

    /// Sends a non-streamed `body` and replays the answer as a stream (the
    /// client's non-streaming mode).
    pub(crate) async fn chat_replayed(
        &self,
        body: Bytes,
        parse: ParseResponse,
    ) -> Result<ChatStream, ProviderError> {
        Ok(replay_answer(self.chat(body, parse).await?))
    }

    /// Sends `body` asking for a stream; a server that answers plain JSON
    /// instead has its answer replayed as a stream.
    pub(crate) async fn chat_stream<A: Assembler>(
        &self,
        body: Bytes,
        parse: ParseResponse,
        assembler: A,
    ) -> Result<ChatStream, ProviderError> {
        let response = self
            .transport
            .post_streaming(&self.url, &self.headers, body)
            .await?;
        if is_json(&response) {
            return replay(&self.transport, response, parse).await;
        }
        Ok(drive(&self.transport, response, assembler))
    }
}

/// Refuses requests with more tools than the provider takes.
pub(crate) fn check_tool_count(
    provider: &'static str,
    request: &ChatRequest,
    limits: ProviderLimits,
) -> Result<(), ProviderError> {
    if request.tools.len() > limits.max_tools {
        return Err(ProviderError::TooManyTools {
            provider,
            count: request.tools.len(),
            max: limits.max_tools,
        });
    }
    Ok(())
}

pub(crate) fn limits(max_tools: usize) -> ProviderLimits {
    ProviderLimits { max_tools }
}

/// `base` + `path`, checked; `variable` names the setting in the error.
pub(crate) fn endpoint(base: &str, path: &str, variable: &str) -> Result<String, ProviderError> {
    let base = base.trim().trim_end_matches('/');
    let parsed = reqwest::Url::parse(base).map_err(|e| {
        ProviderError::Config(format!("{variable} `{base}` is not a valid URL: {e}"))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ProviderError::Config(format!(
            "{variable} `{base}` must start with http:// or https://"
        )));
    }
    Ok(format!("{base}{path}"))
}

/// Adds `extra` headers, checking each.
pub(crate) fn extra_headers(
    headers: &mut HeaderMap,
    extra: &[(String, String)],
) -> Result<(), ProviderError> {
    for (name, value) in extra {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ProviderError::Config(format!("`{name}` is not a valid header name")))?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            ProviderError::Config(format!(
                "the value of header `{name}` is not a valid header value"
            ))
        })?;
        headers.insert(header, value);
    }
    Ok(())
}

/// `x` as a JSON number with its short decimal form (`0.2`, not
/// `0.20000000298023224`).
pub(crate) fn float(x: f32) -> Value {
    x.to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// `error` and its sources, joined: reqwest's own message alone says little.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// The provider's message in an error body: `error.message` (OpenAI,
/// Anthropic), `error` as a string (Ollama), `message` or `detail` (vLLM and
/// other servers); otherwise the start of the raw body.
pub(crate) fn error_message(body: &[u8]) -> Option<String> {
    if let Ok(value) = serde_json::from_slice::<Value>(body)
        && let Some(message) = message_in(&value)
    {
        return Some(message);
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    (!text.is_empty()).then(|| truncate(text, MAX_RAW_ERROR))
}

pub(crate) fn message_in(value: &Value) -> Option<String> {
    let candidates = [
        value.pointer("/error/message"),
        value.get("error").filter(|e| e.is_string()),
        value.get("message"),
        value.get("detail"),
    ];
    candidates.into_iter().flatten().find_map(|v| match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Null => None,
        other if !other.is_string() => Some(other.to_string()),
        _ => None,
    })
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Turns provider stream events into [`StreamEvent`]s and the final answer.
pub(crate) trait Assembler: Send + 'static {
    /// Takes one server-sent event; pushes what it produced to `out`.
    /// Returns `Ok(true)` when the event ends the stream.
    fn on_event(
        &mut self,
        event: &Event,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<bool, ProviderError>;

    /// The assembled answer once the stream has ended; `terminated` tells
    /// whether the provider sent its end-of-stream marker.
    fn finish(self, terminated: bool) -> Result<ChatResponse, ProviderError>;
}

struct Driver<S, A> {
    events: S,
    assembler: Option<A>,
    pending: VecDeque<StreamEvent>,
    idle_timeout: Duration,
    provider: &'static str,
}

/// Streams `response` as SSE through `assembler`. A pause longer than
/// `idle_timeout` between two pieces ends the stream with
/// [`ProviderError::Timeout`]; a broken connection with
/// [`ProviderError::Transport`].
pub(crate) fn drive<A: Assembler>(
    transport: &Transport,
    response: reqwest::Response,
    assembler: A,
) -> ChatStream {
    let driver = Driver {
        events: Box::pin(response.bytes_stream().eventsource()),
        assembler: Some(assembler),
        pending: VecDeque::new(),
        idle_timeout: transport.timeout,
        provider: transport.provider,
    };
    Box::pin(futures::stream::unfold(driver, |mut d| async move {
        let item = d.next_item().await?;
        Some((item, d))
    }))
}

/// Whether the answer is plain JSON although a stream was asked for (some
/// servers ignore `stream: true`, and some send errors that way).
pub(crate) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// A whole JSON answer replayed as a stream: its text, each call started
/// with its arguments in one delta, then [`StreamEvent::Completed`].
pub(crate) async fn replay(
    transport: &Transport,
    response: reqwest::Response,
    parse: ParseResponse,
) -> Result<ChatStream, ProviderError> {
    let bytes = tokio::time::timeout(transport.timeout, response.bytes())
        .await
        .map_err(|_| ProviderError::Timeout {
            provider: transport.provider,
            after: transport.timeout,
        })?
        .map_err(|e| transport.transport_error(&e))?;
    let answer = parse(&bytes).map_err(|e| transport.decode_error(e))?;
    Ok(replay_answer(answer))
}

/// A whole answer as a stream: its text, each call started with its
/// arguments in one delta, then [`StreamEvent::Completed`].
pub(crate) fn replay_answer(answer: ChatResponse) -> ChatStream {
    let mut events = Vec::new();
    if let Some(text) = &answer.content {
        events.push(StreamEvent::TextDelta(text.clone()));
    }
    for (index, call) in answer.tool_calls.iter().enumerate() {
        events.push(StreamEvent::ToolCallStarted {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        });
        let arguments = match &call.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        };
        events.push(StreamEvent::ToolCallDelta { index, arguments });
    }
    events.push(StreamEvent::Completed(answer));
    Box::pin(futures::stream::iter(events.into_iter().map(Ok)))
}

impl<S, E, A> Driver<S, A>
where
    S: Stream<Item = Result<Event, eventsource_stream::EventStreamError<E>>> + Unpin,
    E: std::error::Error + 'static,
    A: Assembler,
{
    async fn next_item(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            let assembler = self.assembler.as_mut()?;
            let next = tokio::time::timeout(self.idle_timeout, self.events.next()).await;
            let outcome = match next {
                Err(_) => Err(ProviderError::Timeout {
                    provider: self.provider,
                    after: self.idle_timeout,
                }),
                Ok(Some(Ok(event))) => match assembler.on_event(&event, &mut self.pending) {
                    Ok(false) => continue,
                    Ok(true) => self.finish(true),
                    Err(e) => Err(e),
                },
                Ok(Some(Err(e))) => Err(self.stream_error(&e)),
                Ok(None) => self.finish(false),
            };
            match outcome {
                Ok(response) => self.pending.push_back(StreamEvent::Completed(response)),
                Err(error) => {
                    self.assembler = None;
                    self.pending.clear();
                    return Some(Err(error));
                }
            }
        }
    }

    fn finish(&mut self, terminated: bool) -> Result<ChatResponse, ProviderError> {
        match self.assembler.take() {
            Some(assembler) => assembler.finish(terminated),
            None => Err(ProviderError::Transport {
                provider: self.provider,
                message: "stream already finished".to_owned(),
            }),
        }
    }

    fn stream_error(&self, error: &eventsource_stream::EventStreamError<E>) -> ProviderError {
        match error {
            eventsource_stream::EventStreamError::Transport(e) => ProviderError::StreamEnded {
                provider: self.provider,
                message: format!("the connection broke: {}", error_chain(e)),
            },
            other => ProviderError::Decode {
                provider: self.provider,
                message: format!("bad event stream: {other}"),
            },
        }
    }
}

/// The error for a stream that ended before its end marker.
pub(crate) fn ended_early(provider: &'static str) -> ProviderError {
    ProviderError::StreamEnded {
        provider,
        message: "the server closed it without an end marker or a finish reason".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_message_finds_the_provider_text() {
        let cases: [(&[u8], &str); 5] = [
            (
                br#"{"error":{"message":"bad key","type":"auth"}}"#,
                "bad key",
            ),
            (
                br#"{"type":"error","error":{"type":"x","message":"too long"}}"#,
                "too long",
            ),
            (br#"{"error":"model not found"}"#, "model not found"),
            (
                br#"{"object":"error","message":"context too long"}"#,
                "context too long",
            ),
            (b"upstream exploded", "upstream exploded"),
        ];
        for (body, want) in cases {
            assert_eq!(error_message(body).as_deref(), Some(want));
        }
        assert_eq!(error_message(b"  "), None);
    }
}
