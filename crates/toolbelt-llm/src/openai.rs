//! [`OpenAiClient`]: chat completions on any OpenAI-compatible endpoint
//! (OpenAI, OpenRouter, DeepSeek, Qwen compatible mode, Ollama, vLLM,
//! llama.cpp's server).

mod stream;
mod wire;

use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};

use crate::error::ProviderError;
use crate::http::{self, Endpoint, Transport};
use crate::names::NameMap;
use crate::normalize::SchemaDialect;
use crate::provider::{ChatProvider, ChatStream, ProviderLimits};
use crate::request::{ChatRequest, ChatResponse};
use crate::retry::RetryConfig;

/// Where OpenAI's own API lives; other servers need [`OpenAiClientBuilder::base_url`].
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Most tools one OpenAI chat completion may carry.
pub const OPENAI_MAX_TOOLS: usize = 128;

/// Default time allowed for one attempt, and longest pause inside a stream.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

const NAME: &str = "openai";

/// A client for OpenAI-compatible chat completions.
///
/// `POST {base_url}/chat/completions` with native `tools`, `tool_choice`,
/// `parallel_tool_calls` and, when streaming, `stream_options.include_usage`.
/// Tool schemas are normalised for [`SchemaDialect::OpenAi`] (or
/// [`SchemaDialect::OpenAiStrict`] per tool with
/// [`strict_tools`](OpenAiClientBuilder::strict_tools)).
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> Result<(), toolbelt_llm::ProviderError> {
/// use toolbelt_llm::{ChatProvider, ChatRequest, Message, OpenAiClient};
///
/// let ollama = OpenAiClient::builder()
///     .base_url("http://localhost:11434/v1")
///     .model("qwen2.5:7b")
///     .build()?;
/// let answer = ollama.chat(ChatRequest::new(vec![Message::user("hi")])).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    endpoint: Endpoint,
    options: wire::Options,
}

/// Builds an [`OpenAiClient`].
#[derive(Debug, Clone)]
#[must_use]
pub struct OpenAiClientBuilder {
    base_url: String,
    api_key: Option<String>,
    model: Option<String>,
    timeout: Duration,
    retry: RetryConfig,
    strict_tools: bool,
    dialect: Option<SchemaDialect>,
    max_tools: usize,
    headers: Vec<(String, String)>,
    stream_usage: bool,
    max_completion_tokens: bool,
    http_client: Option<reqwest::Client>,
    stream: bool,
}

impl OpenAiClient {
    /// A builder with OpenAI's defaults.
    pub fn builder() -> OpenAiClientBuilder {
        OpenAiClientBuilder {
            base_url: OPENAI_BASE_URL.to_owned(),
            api_key: None,
            model: None,
            timeout: DEFAULT_REQUEST_TIMEOUT,
            retry: RetryConfig::default(),
            strict_tools: false,
            dialect: None,
            max_tools: OPENAI_MAX_TOOLS,
            headers: Vec::new(),
            stream_usage: true,
            max_completion_tokens: false,
            http_client: None,
            stream: true,
        }
    }

    /// The model used when a request names none.
    pub fn model(&self) -> &str {
        &self.options.model
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }

    fn body(&self, request: &ChatRequest, stream: bool) -> Result<Bytes, ProviderError> {
        let body = wire::request_body(&self.options, request, stream);
        self.endpoint.encode(request, &body)
    }
}

impl ChatProvider for OpenAiClient {
    fn name(&self) -> &'static str {
        NAME
    }

    fn limits(&self) -> ProviderLimits {
        self.endpoint.limits
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let names = NameMap::for_request(&request);
        let body = self.body(&names.map_request(request), false)?;
        let response = self.endpoint.chat(body, wire::parse_response).await?;
        Ok(names.unmap_response(response))
    }

    fn model(&self) -> Option<&str> {
        Some(&self.options.model)
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
        let names = NameMap::for_request(&request);
        let request = names.map_request(request);
        if !self.endpoint.stream {
            let body = self.body(&request, false)?;
            let stream = self
                .endpoint
                .chat_replayed(body, wire::parse_response)
                .await?;
            return Ok(names.unmap_stream(stream));
        }
        let body = self.body(&request, true)?;
        let stream = self
            .endpoint
            .chat_stream(body, wire::parse_response, stream::Assembler::default())
            .await?;
        Ok(names.unmap_stream(stream))
    }
}

impl OpenAiClientBuilder {
    /// The API root, e.g. `https://openrouter.ai/api/v1` or
    /// `http://localhost:11434/v1` (Ollama); `/chat/completions` is appended.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// The bearer token; local servers often need none.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The model used when a request names none (required).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Time allowed for one attempt, and the longest pause inside a stream
    /// (default [`DEFAULT_REQUEST_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Retries after the first attempt (default 3).
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.retry.max_retries = retries;
        self
    }

    /// The whole retry policy.
    pub fn retry(mut self, retry: RetryConfig) -> Self {
        self.retry = retry;
        self
    }

    /// Sends tools with `"strict": true` and strict-normalised schemas when
    /// their schema allows ([`is_strict_compatible`](crate::is_strict_compatible)).
    pub fn strict_tools(mut self, strict: bool) -> Self {
        self.strict_tools = strict;
        self
    }

    /// Overrides the schema dialect, e.g. [`SchemaDialect::Conservative`] for
    /// Gemini's OpenAI-compatible endpoint.
    pub fn schema_dialect(mut self, dialect: SchemaDialect) -> Self {
        self.dialect = Some(dialect);
        self
    }

    /// Most tools per request (default [`OPENAI_MAX_TOOLS`]).
    pub fn max_tools(mut self, max: usize) -> Self {
        self.max_tools = max;
        self
    }

    /// An extra header on every request (OpenRouter's `HTTP-Referer`, ...).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Whether streamed requests ask for usage (`stream_options`, default on);
    /// turn off for servers that reject the field.
    pub fn stream_usage(mut self, on: bool) -> Self {
        self.stream_usage = on;
        self
    }

    /// Sends the limit as `max_completion_tokens` (newer OpenAI models)
    /// instead of `max_tokens` (what compatible servers know).
    pub fn use_max_completion_tokens(mut self, on: bool) -> Self {
        self.max_completion_tokens = on;
        self
    }

    /// Whether [`chat_stream`](ChatProvider::chat_stream) asks the server for
    /// a stream (default true). Off, it sends one non-streamed request and
    /// replays the whole answer as a stream: for servers that cannot stream
    /// tool calls (llama-cpp-python closes such streams after answering 200).
    pub fn stream(mut self, on: bool) -> Self {
        self.stream = on;
        self
    }

    /// Uses this HTTP client (proxies, custom TLS).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http_client = Some(client);
        self
    }

    /// Checks the settings and builds the client.
    ///
    /// # Errors
    ///
    /// [`ProviderError::Config`] when the model is missing, the base URL is
    /// not an http(s) URL, or a header or the key is not a valid header value.
    pub fn build(self) -> Result<OpenAiClient, ProviderError> {
        let model = self.model.filter(|m| !m.trim().is_empty()).ok_or_else(|| {
            ProviderError::Config(
                "no model for the OpenAI-compatible client: call .model(..) or set TOOLBELT_MODEL"
                    .to_owned(),
            )
        })?;
        let url = http::endpoint(&self.base_url, "/chat/completions", "OPENAI_BASE_URL")?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = self.api_key.filter(|k| !k.is_empty()) {
            let value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ProviderError::Config(
                    "OPENAI_API_KEY holds characters not allowed in a header".to_owned(),
                )
            })?;
            headers.insert(AUTHORIZATION, value);
        }
        http::extra_headers(&mut headers, &self.headers)?;
        let default_dialect = if self.strict_tools {
            SchemaDialect::OpenAiStrict
        } else {
            SchemaDialect::OpenAi
        };
        Ok(OpenAiClient {
            endpoint: Endpoint {
                transport: Transport {
                    client: self.http_client.unwrap_or_default(),
                    provider: NAME,
                    timeout: self.timeout,
                    retry: self.retry,
                },
                url,
                headers,
                limits: http::limits(self.max_tools),
                stream: self.stream,
            },
            options: wire::Options {
                model,
                dialect: self.dialect.unwrap_or(default_dialect),
                stream_usage: self.stream_usage,
                max_tokens_field: if self.max_completion_tokens {
                    "max_completion_tokens"
                } else {
                    "max_tokens"
                },
            },
        })
    }
}
