//! [`ImportError`]: a document that cannot be imported, with the JSON pointer at fault.

/// A document (or an option) that cannot be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The document is not usable at `pointer` (a JSON pointer into it; empty for the whole).
    #[error("invalid OpenAPI document at `{pointer}`: {reason}")]
    Document {
        /// Where in the document.
        pointer: String,
        /// What is wrong.
        reason: String,
    },
    /// An import option is not usable.
    #[error("invalid {option}: {reason}")]
    Option {
        /// The option (`prefix`, `tags`, `operations`, `base_url`).
        option: &'static str,
        /// What is wrong and what is allowed.
        reason: String,
    },
}

impl ImportError {
    pub(crate) fn at(pointer: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Document {
            pointer: pointer.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn option(option: &'static str, reason: impl Into<String>) -> Self {
        Self::Option {
            option,
            reason: reason.into(),
        }
    }

    /// The JSON pointer into the document, for a document error.
    pub fn pointer(&self) -> Option<&str> {
        match self {
            Self::Document { pointer, .. } => Some(pointer),
            Self::Option { .. } => None,
        }
    }
}
