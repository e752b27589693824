//! [`OpenAiEmbedder`]: an [`Embedder`] for OpenAI-compatible `/v1/embeddings` endpoints.

use serde::Deserialize;
use toolbelt_core::BoxFuture;

use super::{Embedder, EmbedderError};

/// Calls `POST {base_url}/embeddings` (OpenAI, vLLM, Ollama, LM Studio, ...).
///
/// `base_url` includes the version prefix, as OpenAI SDKs expect:
/// `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    client: reqwest::Client,
    base_url: String,
    model: String,
    api_key: Option<String>,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: usize,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    /// An embedder for `model` at `base_url`.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            client: reqwest::Client::new(),
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            model: model.into(),
            api_key: None,
        }
    }

    /// Sends `Authorization: Bearer <key>`.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Uses `client` (timeouts, proxies) instead of a default one.
    #[must_use]
    pub fn with_client(mut self, client: reqwest::Client) -> Self {
        self.client = client;
        self
    }

    async fn call(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedderError> {
        let fail = |message: String| EmbedderError::new("embeddings endpoint", message);
        let url = format!("{}/embeddings", self.base_url);
        let mut request = self
            .client
            .post(&url)
            .json(&serde_json::json!({ "model": self.model, "input": texts }));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|e| fail(format!("POST {url}: {e}")))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|e| fail(format!("reading the answer of {url}: {e}")))?;
        if !status.is_success() {
            let snippet: String = body.chars().take(300).collect();
            return Err(fail(format!("POST {url} answered {status}: {snippet}")));
        }
        let mut parsed: Response = serde_json::from_str(&body).map_err(|e| {
            fail(format!(
                "answer of {url} is not an embeddings response: {e}"
            ))
        })?;
        parsed.data.sort_by_key(|item| item.index);
        Ok(parsed.data.into_iter().map(|item| item.embedding).collect())
    }
}

impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        Box::pin(self.call(texts))
    }
}
