//! The [`ChatProvider`] trait and its shared handle [`Provider`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use toolbelt_core::BoxFuture;

use crate::error::ProviderError;
use crate::request::{ChatRequest, ChatResponse, StreamEvent};

/// A stream of answer pieces; ends with [`StreamEvent::Completed`] on success.
pub type ChatStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// What a provider accepts, so requests can be shaped before sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderLimits {
    /// Most tools one request may carry.
    pub max_tools: usize,
}

impl Default for ProviderLimits {
    fn default() -> Self {
        Self { max_tools: 128 }
    }
}

/// A chat model API.
pub trait ChatProvider: Send + Sync + 'static {
    /// A short name for logs and errors (`openai`, `anthropic`, ...).
    fn name(&self) -> &'static str;

    /// What requests to this provider may carry.
    fn limits(&self) -> ProviderLimits {
        ProviderLimits::default()
    }

    /// The model requests go to when they name none, if the provider has one
    /// (used to pick a [`ModelProfile`](crate::ModelProfile)).
    fn model(&self) -> Option<&str> {
        None
    }

    /// Sends `request` and waits for the whole answer.
    fn chat(
        &self,
        request: ChatRequest,
    ) -> impl Future<Output = Result<ChatResponse, ProviderError>> + Send;

    /// Sends `request` and streams the answer.
    fn chat_stream(
        &self,
        request: ChatRequest,
    ) -> impl Future<Output = Result<ChatStream, ProviderError>> + Send;
}

trait ErasedProvider: Send + Sync + 'static {
    fn name(&self) -> &'static str;
    fn limits(&self) -> ProviderLimits;
    fn model(&self) -> Option<&str>;
    fn chat(&self, request: ChatRequest) -> BoxFuture<'_, Result<ChatResponse, ProviderError>>;
    fn chat_stream(&self, request: ChatRequest)
    -> BoxFuture<'_, Result<ChatStream, ProviderError>>;
}

impl<P: ChatProvider> ErasedProvider for P {
    fn name(&self) -> &'static str {
        ChatProvider::name(self)
    }
    fn limits(&self) -> ProviderLimits {
        ChatProvider::limits(self)
    }
    fn model(&self) -> Option<&str> {
        ChatProvider::model(self)
    }
    fn chat(&self, request: ChatRequest) -> BoxFuture<'_, Result<ChatResponse, ProviderError>> {
        Box::pin(ChatProvider::chat(self, request))
    }
    fn chat_stream(
        &self,
        request: ChatRequest,
    ) -> BoxFuture<'_, Result<ChatStream, ProviderError>> {
        Box::pin(ChatProvider::chat_stream(self, request))
    }
}

/// A shared, type-erased [`ChatProvider`]; cloning is an `Arc` clone.
#[derive(Clone)]
pub struct Provider {
    inner: Arc<dyn ErasedProvider>,
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Provider").field(&self.inner.name()).finish()
    }
}

impl Provider {
    /// Wraps `provider`.
    pub fn new(provider: impl ChatProvider) -> Self {
        Self {
            inner: Arc::new(provider),
        }
    }

    /// The provider's short name.
    pub fn name(&self) -> &'static str {
        self.inner.name()
    }

    /// What requests may carry.
    pub fn limits(&self) -> ProviderLimits {
        self.inner.limits()
    }

    /// The provider's default model, if it has one.
    pub fn model(&self) -> Option<&str> {
        self.inner.model()
    }

    /// See [`ChatProvider::chat`].
    pub fn chat(&self, request: ChatRequest) -> BoxFuture<'_, Result<ChatResponse, ProviderError>> {
        self.inner.chat(request)
    }

    /// See [`ChatProvider::chat_stream`].
    pub fn chat_stream(
        &self,
        request: ChatRequest,
    ) -> BoxFuture<'_, Result<ChatStream, ProviderError>> {
        self.inner.chat_stream(request)
    }
}
