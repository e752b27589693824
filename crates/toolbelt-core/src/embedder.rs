//! [`Embedder`]: texts to vectors, the one seam the router (ranking tools by meaning) and agent
//! memory (recalling entries by meaning) share.

use crate::BoxFuture;

/// Turns texts into vectors (a remote endpoint, an in-process model, a test double).
///
/// An implementation whose work is blocking (a model on the CPU) runs it where blocking is
/// allowed (the blocking pool), so callers simply await it.
pub trait Embedder: Send + Sync + 'static {
    /// The model's id: part of cache keys, and vectors of another model are never compared
    /// with this one's.
    fn model(&self) -> &str;

    /// One vector per text, in order; an empty vector (a text the model cannot read) matches
    /// nothing.
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>>;
}

/// Why an embedder made no vectors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{backend} failed: {message}")]
#[non_exhaustive]
pub struct EmbedderError {
    /// Which embedder (`embeddings endpoint`, `multilingual embedder`, …).
    pub backend: &'static str,
    /// What went wrong.
    pub message: String,
}

impl EmbedderError {
    /// `backend` failed with `message`.
    pub fn new(backend: &'static str, message: impl Into<String>) -> Self {
        Self {
            backend,
            message: message.into(),
        }
    }
}
