//! [`EmbedError`]: why a model could not be loaded or could not embed.

use std::path::PathBuf;

/// Why an encoder could not be loaded or could not embed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A file the model folder must hold is missing.
    #[error("model file {} is missing (run scripts/fetch-model.sh)", path.display())]
    MissingFile {
        /// The missing file.
        path: PathBuf,
    },
    /// A model file could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The SentencePiece model could not be read, or a text could not be tokenized.
    #[error("tokenizer {}: {message}", path.display())]
    Tokenizer {
        /// The tokenizer file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The weights file could not be read.
    #[error("cannot read the weights {}", path.display())]
    Weights {
        /// The weights file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: candle_core::Error,
    },
    /// A weight array does not have the shape the architecture needs.
    #[error("weight `{name}` has shape {found:?}, expected {expected:?}")]
    Shape {
        /// The array's name in the weights file.
        name: String,
        /// The shape the architecture needs.
        expected: Vec<usize>,
        /// The shape in the file.
        found: Vec<usize>,
    },
    /// A model's configuration cannot be read, or describes a model this crate does not run.
    #[error("model configuration {}: {message}", path.display())]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong, naming the field.
        message: String,
    },
    /// The input cannot be run (a token id outside the vocabulary, a text too long).
    #[error("{0}")]
    Input(String),
    /// The forward pass failed.
    #[error("model {model} failed")]
    Model {
        /// The model id.
        model: String,
        /// The cause.
        #[source]
        source: candle_core::Error,
    },
}

/// `dir/name`, or [`EmbedError::MissingFile`] naming it when it is not a file.
pub(crate) fn model_file(dir: &std::path::Path, name: &str) -> Result<PathBuf, EmbedError> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(EmbedError::MissingFile { path })
    }
}
