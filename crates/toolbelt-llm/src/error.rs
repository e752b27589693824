//! [`ProviderError`]: why a chat request failed.

use std::time::Duration;

/// Why a provider could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider is not configured; says what to set.
    #[error("provider not configured: {0}")]
    Config(String),
    /// The API answered with an error status.
    #[error("{provider} API error {status}: {message}")]
    Api {
        /// Which provider.
        provider: &'static str,
        /// HTTP status.
        status: u16,
        /// The provider's own error message.
        message: String,
    },
    /// Rate limited, and retries ran out.
    #[error("rate limited by {provider}{}", .retry_after.map(|d| format!("; retry after {}s", d.as_secs())).unwrap_or_default())]
    RateLimited {
        /// Which provider.
        provider: &'static str,
        /// The wait the provider asked for.
        retry_after: Option<Duration>,
    },
    /// No answer in time.
    #[error("request to {provider} timed out after {}s", .after.as_secs())]
    Timeout {
        /// Which provider.
        provider: &'static str,
        /// The timeout that elapsed.
        after: Duration,
    },
    /// The connection failed or broke.
    #[error("could not reach {provider}: {message}")]
    Transport {
        /// Which provider.
        provider: &'static str,
        /// What failed.
        message: String,
    },
    /// The server accepted the request (HTTP 200) and began a stream, then
    /// closed or broke it before the answer was complete. Unlike
    /// [`ProviderError::Transport`], the server was reached: some servers
    /// (llama-cpp-python with a forced tool choice) do this instead of
    /// refusing streamed tool calls, and a non-streamed request may work.
    #[error(
        "{provider} answered 200 but the stream ended before the answer was complete: {message}"
    )]
    StreamEnded {
        /// Which provider.
        provider: &'static str,
        /// What happened to the stream.
        message: String,
    },
    /// The answer could not be understood.
    #[error("could not decode {provider}'s answer: {message}")]
    Decode {
        /// Which provider.
        provider: &'static str,
        /// What did not parse.
        message: String,
    },
    /// The request was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The request offers more tools than the provider accepts; narrow the set first.
    #[error(
        "request offers {count} tools but {provider} accepts at most {max}; narrow the tool set before sending"
    )]
    TooManyTools {
        /// Which provider.
        provider: &'static str,
        /// Tools in the request.
        count: usize,
        /// The provider's limit ([`ProviderLimits::max_tools`](crate::ProviderLimits::max_tools)).
        max: usize,
    },
}

impl ProviderError {
    /// Whether trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Api { status, .. } => *status == 429 || *status >= 500,
            Self::RateLimited { .. } | Self::Timeout { .. } | Self::Transport { .. } => true,
            _ => false,
        }
    }

    /// Whether a non-streamed request may succeed where a streamed one failed:
    /// the stream ended early, or the server refused streaming (an error
    /// status whose message mentions streaming).
    pub fn suggests_no_stream(&self) -> bool {
        match self {
            Self::StreamEnded { .. } => true,
            Self::Api {
                status, message, ..
            } => (400..500).contains(status) && message.to_lowercase().contains("stream"),
            _ => false,
        }
    }

    /// The provider's short name, when the error came from one.
    pub fn provider(&self) -> Option<&'static str> {
        match self {
            Self::Api { provider, .. }
            | Self::RateLimited { provider, .. }
            | Self::Timeout { provider, .. }
            | Self::Transport { provider, .. }
            | Self::StreamEnded { provider, .. }
            | Self::Decode { provider, .. }
            | Self::TooManyTools { provider, .. } => Some(provider),
            _ => None,
        }
    }
}
