//! [`ProviderConfig`]: choosing and configuring a provider from environment
//! variables or from code.
//!
//! See [`ProviderConfig`] for the variables.

use std::fmt;
use std::time::Duration;

use crate::anthropic::AnthropicClient;
use crate::error::ProviderError;
use crate::openai::{DEFAULT_REQUEST_TIMEOUT, OpenAiClient};
use crate::provider::Provider;
use crate::retry::RetryConfig;

/// The model used on OpenAI's own API when `TOOLBELT_MODEL` is unset.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";

/// The model used on Anthropic when `TOOLBELT_MODEL` is unset.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

/// What to set when nothing is configured.
const NOTHING_SET: &str = "set OPENAI_API_KEY to use OpenAI (TOOLBELT_MODEL picks the model, \
default gpt-4o-mini); or OPENAI_BASE_URL and TOOLBELT_MODEL (plus OPENAI_API_KEY if the server \
wants one) for an OpenAI-compatible server such as OpenRouter (https://openrouter.ai/api/v1), \
Ollama (http://localhost:11434/v1), vLLM or llama.cpp; or TOOLBELT_PROVIDER=anthropic and \
ANTHROPIC_API_KEY to use Anthropic";

/// Which API a [`ProviderConfig`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderKind {
    /// OpenAI chat completions and compatible servers.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        })
    }
}

/// Everything needed to build a [`Provider`], from code or from these
/// environment variables:
///
/// | variable | meaning |
/// | --- | --- |
/// | `TOOLBELT_PROVIDER` | `openai` (default) or `anthropic` |
/// | `OPENAI_API_KEY` | key for OpenAI or an OpenAI-compatible server (local servers may need none) |
/// | `OPENAI_BASE_URL` | API root of an OpenAI-compatible server, e.g. `https://openrouter.ai/api/v1`, `http://localhost:11434/v1` (Ollama), `http://localhost:8000/v1` (vLLM) |
/// | `ANTHROPIC_API_KEY` | key for Anthropic |
/// | `ANTHROPIC_BASE_URL` | API root for Anthropic (default `https://api.anthropic.com`) |
/// | `TOOLBELT_MODEL` | model id; required with `OPENAI_BASE_URL`, else defaults to [`DEFAULT_OPENAI_MODEL`] / [`DEFAULT_ANTHROPIC_MODEL`] |
/// | `TOOLBELT_STREAM` | `off` (or `0`, `false`, `no`) sends non-streamed requests and replays the answers as streams (servers that cannot stream tool calls); default on |
///
/// Empty variables count as unset.
///
/// # Examples
///
/// ```
/// use toolbelt_llm::{ProviderConfig, ProviderKind};
///
/// let vars = [("OPENAI_BASE_URL", "http://localhost:11434/v1"), ("TOOLBELT_MODEL", "qwen2.5")];
/// let config = ProviderConfig::from_vars(|name| {
///     vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
/// })?;
/// assert_eq!(config.kind, ProviderKind::OpenAi);
/// let provider = config.into_provider()?;
/// assert_eq!(provider.name(), "openai");
/// # Ok::<(), toolbelt_llm::ProviderError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderConfig {
    /// Which API.
    pub kind: ProviderKind,
    /// The API root; `None` uses the provider's own.
    pub base_url: Option<String>,
    /// The API key.
    pub api_key: Option<String>,
    /// The model; `None` uses the provider's default.
    pub model: Option<String>,
    /// Time allowed per attempt and per pause in a stream.
    pub timeout: Duration,
    /// Retry policy.
    pub retry: RetryConfig,
    /// Whether streamed requests really stream (default true); see
    /// [`OpenAiClientBuilder::stream`](crate::OpenAiClientBuilder::stream).
    pub stream: bool,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("stream", &self.stream)
            .finish()
    }
}

impl ProviderConfig {
    /// A configuration for `kind` with nothing else set.
    pub fn new(kind: ProviderKind) -> Self {
        Self {
            kind,
            base_url: None,
            api_key: None,
            model: None,
            timeout: DEFAULT_REQUEST_TIMEOUT,
            retry: RetryConfig::default(),
            stream: true,
        }
    }

    /// OpenAI or an OpenAI-compatible server.
    pub fn openai() -> Self {
        Self::new(ProviderKind::OpenAi)
    }

    /// Anthropic.
    pub fn anthropic() -> Self {
        Self::new(ProviderKind::Anthropic)
    }

    /// Sets the API root.
    #[must_use]
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Sets the API key.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the model.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the retry policy.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryConfig) -> Self {
        self.retry = retry;
        self
    }

    /// Sets whether streamed requests really stream.
    #[must_use]
    pub fn with_stream(mut self, on: bool) -> Self {
        self.stream = on;
        self
    }

    /// Reads the process environment; see [`ProviderConfig`] for the variables.
    ///
    /// # Errors
    ///
    /// [`ProviderError::Config`] naming the variables to set.
    pub fn from_env() -> Result<Self, ProviderError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// Reads variables through `get` (so tests need not touch the process
    /// environment); see [`ProviderConfig`] for the variables.
    ///
    /// # Errors
    ///
    /// [`ProviderError::Config`] naming the variables to set.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self, ProviderError> {
        let var = |name: &str| {
            get(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let kind = match var("TOOLBELT_PROVIDER")
            .map(|p| p.to_lowercase())
            .as_deref()
        {
            None | Some("openai") => ProviderKind::OpenAi,
            Some("anthropic") => ProviderKind::Anthropic,
            Some(other) => {
                return Err(ProviderError::Config(format!(
                    "TOOLBELT_PROVIDER is `{other}`; expected `openai` or `anthropic`"
                )));
            }
        };
        let model = var("TOOLBELT_MODEL");
        let stream = match var("TOOLBELT_STREAM").map(|v| v.to_lowercase()).as_deref() {
            None | Some("1" | "on" | "true" | "yes") => true,
            Some("0" | "off" | "false" | "no") => false,
            Some(other) => {
                return Err(ProviderError::Config(format!(
                    "TOOLBELT_STREAM is `{other}`; expected `on` or `off`"
                )));
            }
        };
        let config = match kind {
            ProviderKind::OpenAi => {
                let base_url = var("OPENAI_BASE_URL");
                let api_key = var("OPENAI_API_KEY");
                match (&base_url, &api_key, &model) {
                    (None, None, _) => return Err(ProviderError::Config(NOTHING_SET.to_owned())),
                    (Some(url), _, None) => {
                        return Err(ProviderError::Config(format!(
                            "OPENAI_BASE_URL is set to {url} but TOOLBELT_MODEL is not; set \
                             TOOLBELT_MODEL to a model that server serves (e.g. llama3.2 on Ollama)"
                        )));
                    }
                    _ => {}
                }
                Self {
                    base_url,
                    api_key,
                    ..Self::openai()
                }
            }
            ProviderKind::Anthropic => {
                let Some(api_key) = var("ANTHROPIC_API_KEY") else {
                    return Err(ProviderError::Config(
                        "TOOLBELT_PROVIDER is anthropic but ANTHROPIC_API_KEY is not set; set it \
                         (ANTHROPIC_BASE_URL and TOOLBELT_MODEL are optional)"
                            .to_owned(),
                    ));
                };
                Self {
                    base_url: var("ANTHROPIC_BASE_URL"),
                    api_key: Some(api_key),
                    ..Self::anthropic()
                }
            }
        };
        Ok(Self {
            model,
            stream,
            ..config
        })
    }

    /// The model a client built from this config will use.
    pub fn model_or_default(&self) -> &str {
        match (&self.model, self.kind) {
            (Some(model), _) => model,
            (None, ProviderKind::OpenAi) => DEFAULT_OPENAI_MODEL,
            (None, ProviderKind::Anthropic) => DEFAULT_ANTHROPIC_MODEL,
        }
    }

    /// Builds the client.
    ///
    /// # Errors
    ///
    /// [`ProviderError::Config`] when a setting is missing or invalid.
    pub fn into_provider(self) -> Result<Provider, ProviderError> {
        let model = self.model_or_default().to_owned();
        match self.kind {
            ProviderKind::OpenAi => {
                let mut builder = OpenAiClient::builder()
                    .model(model)
                    .timeout(self.timeout)
                    .retry(self.retry)
                    .stream(self.stream);
                if let Some(url) = self.base_url {
                    builder = builder.base_url(url);
                }
                if let Some(key) = self.api_key {
                    builder = builder.api_key(key);
                }
                builder.build().map(Provider::new)
            }
            ProviderKind::Anthropic => {
                let mut builder = AnthropicClient::builder()
                    .model(model)
                    .timeout(self.timeout)
                    .retry(self.retry)
                    .stream(self.stream);
                if let Some(url) = self.base_url {
                    builder = builder.base_url(url);
                }
                if let Some(key) = self.api_key {
                    builder = builder.api_key(key);
                }
                builder.build().map(Provider::new)
            }
        }
    }
}

/// The provider the environment describes; see [`ProviderConfig::from_env`].
///
/// # Errors
///
/// [`ProviderError::Config`] naming the variables to set.
pub fn provider_from_env() -> Result<Provider, ProviderError> {
    ProviderConfig::from_env()?.into_provider()
}
