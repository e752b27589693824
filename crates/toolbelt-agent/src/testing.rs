//! In-process providers for tests and benchmarks (feature `test-util`).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use serde_json::json;
//! use toolbelt_agent::{Agent, testing::ScriptedProvider};
//! use toolbelt_core::FnTool;
//!
//! let script = ScriptedProvider::new()
//!     .then_call("add", json!({"a": 2, "b": 3}))
//!     .then_text("2 + 3 = 5");
//! let add = FnTool::builder("add").description("Add a and b")
//!     .handler(|args, _ctx| async move { args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0) })
//!     .unwrap();
//! let agent = Agent::builder(script.provider()).tool(add).build().unwrap();
//! let out = agent.run("What is 2 + 3?").await.unwrap();
//! assert_eq!(out.answer, "2 + 3 = 5");
//! assert_eq!(script.requests()[1].messages.last().unwrap().text(), Some("5"));
//! # });
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use toolbelt_core::ToolCall;
use toolbelt_llm::{
    ChatProvider, ChatRequest, ChatResponse, ChatStream, Provider, ProviderError, StreamEvent,
};

/// One scripted answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum Reply {
    /// Answer with this response.
    Answer(ChatResponse),
    /// Fail with this error.
    Fail(ProviderError),
    /// Wait, then reply.
    After(Duration, Box<Reply>),
    /// Never answer (for timeout and cancellation tests).
    Hang,
}

impl From<ChatResponse> for Reply {
    fn from(response: ChatResponse) -> Self {
        Self::Answer(response)
    }
}

type ReplyFn = dyn Fn(&ChatRequest) -> Reply + Send + Sync;

struct Inner {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<ChatRequest>>,
    record: bool,
    next_id: Mutex<u64>,
    fallback: Option<Box<ReplyFn>>,
}

/// A provider that replays scripted replies in order and records every request.
///
/// Cloning shares the script and the record, so a test keeps one clone to
/// inspect what the agent sent. Streaming splits text into word deltas and
/// sends tool calls as start and argument events before the full answer.
#[derive(Clone)]
pub struct ScriptedProvider {
    inner: Arc<Inner>,
}

impl fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("remaining", &self.remaining())
            .finish_non_exhaustive()
    }
}

impl Default for ScriptedProvider {
    fn default() -> Self {
        Self::new()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ScriptedProvider {
    /// An empty script; once it runs out, requests fail with an API error.
    pub fn new() -> Self {
        Self::build(None, true)
    }

    /// A provider that computes each reply from the request (no script, no record).
    ///
    /// Benchmarks use it: it answers at once and keeps nothing.
    pub fn from_fn(reply: impl Fn(&ChatRequest) -> Reply + Send + Sync + 'static) -> Self {
        Self::build(Some(Box::new(reply)), false)
    }

    fn build(fallback: Option<Box<ReplyFn>>, record: bool) -> Self {
        Self {
            inner: Arc::new(Inner {
                replies: Mutex::new(VecDeque::new()),
                requests: Mutex::new(Vec::new()),
                record,
                next_id: Mutex::new(0),
                fallback,
            }),
        }
    }

    /// Appends a reply.
    #[must_use]
    pub fn then(self, reply: impl Into<Reply>) -> Self {
        lock(&self.inner.replies).push_back(reply.into());
        self
    }

    /// Appends a text answer.
    #[must_use]
    pub fn then_text(self, text: impl Into<String>) -> Self {
        self.then(ChatResponse::text(text))
    }

    /// Appends an answer calling one tool (ids are `call_1`, `call_2`, ... across the script).
    #[must_use]
    pub fn then_call(self, name: &str, arguments: Value) -> Self {
        self.then_calls([(name, arguments)])
    }

    /// Appends an answer calling several tools at once.
    #[must_use]
    pub fn then_calls<'a>(self, calls: impl IntoIterator<Item = (&'a str, Value)>) -> Self {
        let calls = calls
            .into_iter()
            .map(|(name, arguments)| ToolCall::new(self.next_id(), name, arguments))
            .collect();
        self.then(ChatResponse::tool_calls(calls))
    }

    /// Appends a failure.
    #[must_use]
    pub fn then_error(self, error: ProviderError) -> Self {
        self.then(Reply::Fail(error))
    }

    /// Appends a reply given after `delay`.
    #[must_use]
    pub fn then_after(self, delay: Duration, reply: impl Into<Reply>) -> Self {
        self.then(Reply::After(delay, Box::new(reply.into())))
    }

    /// Appends a reply that never comes.
    #[must_use]
    pub fn then_hang(self) -> Self {
        self.then(Reply::Hang)
    }

    /// This provider as a [`Provider`] for an agent.
    pub fn provider(&self) -> Provider {
        Provider::new(self.clone())
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        lock(&self.inner.requests).clone()
    }

    /// Replies not used yet.
    pub fn remaining(&self) -> usize {
        lock(&self.inner.replies).len()
    }

    fn next_id(&self) -> String {
        let mut next = lock(&self.inner.next_id);
        *next += 1;
        format!("call_{next}")
    }

    fn next_reply(&self, request: &ChatRequest) -> Reply {
        if self.inner.record {
            lock(&self.inner.requests).push(request.clone());
        }
        if let Some(reply) = lock(&self.inner.replies).pop_front() {
            return reply;
        }
        match &self.inner.fallback {
            Some(compute) => compute(request),
            None => Reply::Fail(ProviderError::Api {
                provider: "scripted",
                status: 500,
                message: format!(
                    "the script has no reply left for request {}",
                    lock(&self.inner.requests).len()
                ),
            }),
        }
    }
}

async fn settle(mut reply: Reply) -> Result<ChatResponse, ProviderError> {
    loop {
        match reply {
            Reply::Answer(response) => return Ok(response),
            Reply::Fail(error) => return Err(error),
            Reply::After(delay, next) => {
                tokio::time::sleep(delay).await;
                reply = *next;
            }
            Reply::Hang => std::future::pending::<()>().await,
        }
    }
}

impl ChatProvider for ScriptedProvider {
    fn name(&self) -> &'static str {
        "scripted"
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        settle(self.next_reply(&request)).await
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
        let response = settle(self.next_reply(&request)).await?;
        let mut events: Vec<Result<StreamEvent, ProviderError>> = Vec::new();
        if let Some(text) = &response.content {
            events.extend(
                text.split_inclusive(' ')
                    .map(|piece| Ok(StreamEvent::TextDelta(piece.to_owned()))),
            );
        }
        for (index, call) in response.tool_calls.iter().enumerate() {
            events.push(Ok(StreamEvent::ToolCallStarted {
                index,
                id: call.id.clone(),
                name: call.name.clone(),
            }));
            events.push(Ok(StreamEvent::ToolCallDelta {
                index,
                arguments: call.arguments.to_string(),
            }));
        }
        events.push(Ok(StreamEvent::Completed(response)));
        Ok(Box::pin(futures::stream::iter(events)))
    }
}
