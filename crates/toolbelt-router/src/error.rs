//! [`RouteError`]: why a router could not decide.

/// Why a router could not decide; callers fall back rather than fail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// A configuration (keyword groups, catalog) is invalid.
    #[error("invalid router configuration: {0}")]
    Config(String),
    /// A backend (embedding endpoint, LLM) failed.
    #[error("{backend} failed: {message}")]
    Backend {
        /// Which backend.
        backend: &'static str,
        /// What went wrong.
        message: String,
    },
}

impl From<toolbelt_core::EmbedderError> for RouteError {
    fn from(e: toolbelt_core::EmbedderError) -> Self {
        Self::Backend {
            backend: e.backend,
            message: e.message,
        }
    }
}
