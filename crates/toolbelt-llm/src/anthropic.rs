//! [`AnthropicClient`]: the Anthropic Messages API with `tool_use` /
//! `tool_result` blocks and streaming.

mod stream;
mod wire;

use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};

use crate::error::ProviderError;
use crate::http::{self, Endpoint, Transport};
use crate::names::NameMap;
use crate::openai::DEFAULT_REQUEST_TIMEOUT;
use crate::provider::{ChatProvider, ChatStream, ProviderLimits};
use crate::request::{ChatRequest, ChatResponse};
use crate::retry::RetryConfig;

/// Where Anthropic's API lives; `/v1/messages` is appended.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Most tools one Anthropic request may carry here.
///
/// Anthropic publishes no hard limit; every definition costs context tokens
/// and selection quality drops long before a few hundred tools, so toolbelt
/// uses OpenAI's documented bound for both (see `docs/adr/0004-llm-clients.md`).
pub const ANTHROPIC_MAX_TOOLS: usize = 128;

/// `max_tokens` when a request sets none (Anthropic requires the field).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

const NAME: &str = "anthropic";

/// A client for the Anthropic Messages API.
///
/// System messages go to the top-level `system`; consecutive tool results
/// become one user message with several `tool_result` blocks; tool schemas
/// are normalised for [`SchemaDialect::Anthropic`](crate::SchemaDialect::Anthropic).
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> Result<(), toolbelt_llm::ProviderError> {
/// use toolbelt_llm::{AnthropicClient, ChatProvider, ChatRequest, Message};
///
/// let claude = AnthropicClient::builder()
///     .api_key(std::env::var("ANTHROPIC_API_KEY").unwrap_or_default())
///     .model("claude-sonnet-4-5")
///     .build()?;
/// let answer = claude.chat(ChatRequest::new(vec![Message::user("hi")])).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    endpoint: Endpoint,
    options: wire::Options,
}

/// Builds an [`AnthropicClient`].
#[derive(Debug, Clone)]
#[must_use]
pub struct AnthropicClientBuilder {
    base_url: String,
    api_key: Option<String>,
    model: Option<String>,
    timeout: Duration,
    retry: RetryConfig,
    max_tools: usize,
    max_tokens: u32,
    headers: Vec<(String, String)>,
    http_client: Option<reqwest::Client>,
    stream: bool,
}

impl AnthropicClient {
    /// A builder with Anthropic's defaults.
    pub fn builder() -> AnthropicClientBuilder {
        AnthropicClientBuilder {
            base_url: ANTHROPIC_BASE_URL.to_owned(),
            api_key: None,
            model: None,
            timeout: DEFAULT_REQUEST_TIMEOUT,
            retry: RetryConfig::default(),
            max_tools: ANTHROPIC_MAX_TOOLS,
            max_tokens: DEFAULT_MAX_TOKENS,
            headers: Vec::new(),
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

impl ChatProvider for AnthropicClient {
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

impl AnthropicClientBuilder {
    /// The API root (default [`ANTHROPIC_BASE_URL`]); `/v1/messages` is appended.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// The API key, sent as `x-api-key` (required).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The model used when a request names none (required).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Time allowed for one attempt, and the longest pause inside a stream.
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

    /// Most tools per request (default [`ANTHROPIC_MAX_TOOLS`]).
    pub fn max_tools(mut self, max: usize) -> Self {
        self.max_tools = max;
        self
    }

    /// `max_tokens` for requests that set none (default [`DEFAULT_MAX_TOKENS`]).
    pub fn default_max_tokens(mut self, max: u32) -> Self {
        self.max_tokens = max;
        self
    }

    /// An extra header on every request (e.g. `anthropic-beta`).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
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
    /// [`ProviderError::Config`] when the key or model is missing, the base URL
    /// is not an http(s) URL, or a header value is invalid.
    pub fn build(self) -> Result<AnthropicClient, ProviderError> {
        let key = self.api_key.filter(|k| !k.is_empty()).ok_or_else(|| {
            ProviderError::Config(
                "no API key for the Anthropic client: call .api_key(..) or set ANTHROPIC_API_KEY"
                    .to_owned(),
            )
        })?;
        let model = self.model.filter(|m| !m.trim().is_empty()).ok_or_else(|| {
            ProviderError::Config(
                "no model for the Anthropic client: call .model(..) or set TOOLBELT_MODEL"
                    .to_owned(),
            )
        })?;
        let url = http::endpoint(&self.base_url, "/v1/messages", "ANTHROPIC_BASE_URL")?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            "anthropic-version",
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        let key = HeaderValue::from_str(&key).map_err(|_| {
            ProviderError::Config(
                "ANTHROPIC_API_KEY holds characters not allowed in a header".to_owned(),
            )
        })?;
        headers.insert("x-api-key", key);
        http::extra_headers(&mut headers, &self.headers)?;
        Ok(AnthropicClient {
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
                max_tokens: self.max_tokens,
            },
        })
    }
}
