//! [`ProviderCompleter`]: a chat provider as the text completer of the LLM router.

use toolbelt_core::BoxFuture;
use toolbelt_llm::{ChatRequest, Message, Provider};
use toolbelt_router::{Completer, RouteError};

/// Lets `toolbelt_router::LlmRouter` ask a [`Provider`] (no tools, temperature 0).
///
/// ```no_run
/// # fn demo(provider: toolbelt_llm::Provider) {
/// use toolbelt_agent::ProviderCompleter;
/// let completer = ProviderCompleter::new(provider).with_model("gpt-4o-mini");
/// # let _ = completer; }
/// ```
#[derive(Debug, Clone)]
pub struct ProviderCompleter {
    provider: Provider,
    model: Option<String>,
    max_tokens: Option<u32>,
}

impl ProviderCompleter {
    /// Completes with `provider`'s configured model.
    pub fn new(provider: Provider) -> Self {
        Self {
            provider,
            model: None,
            max_tokens: None,
        }
    }

    /// Uses `model` instead (a small, fast one suits routing).
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Caps each answer at `tokens` (a router's answer is short; a model that keeps writing
    /// is cut off instead of holding the request).
    #[must_use]
    pub fn with_max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = Some(tokens);
        self
    }
}

impl Completer for ProviderCompleter {
    fn complete<'a>(
        &'a self,
        system: &'a str,
        user: &'a str,
    ) -> BoxFuture<'a, Result<String, RouteError>> {
        Box::pin(async move {
            let mut request = ChatRequest::new(vec![Message::system(system), Message::user(user)]);
            request.model.clone_from(&self.model);
            request.temperature = Some(0.0);
            request.max_tokens = self.max_tokens;
            let response = self
                .provider
                .chat(request)
                .await
                .map_err(|e| RouteError::Backend {
                    backend: self.provider.name(),
                    message: e.to_string(),
                })?;
            Ok(response.content.unwrap_or_default())
        })
    }
}
