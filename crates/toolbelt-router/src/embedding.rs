//! [`EmbeddingRouter`]: routing by cosine similarity of embeddings made by an [`Embedder`]
//! (core's seam, shared with agent memory).

#[cfg(feature = "local-embed")]
mod local;
#[cfg(feature = "multilingual-embed")]
mod multilingual;
#[cfg(feature = "openai-embeddings")]
mod openai;
#[cfg(any(feature = "local-embed", feature = "multilingual-embed"))]
mod passes;

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

pub use toolbelt_core::{Embedder, EmbedderError};
use toolbelt_core::{ToolHandle, Toolset};

#[cfg(feature = "local-embed")]
pub use local::{LocalEmbedError, LocalEmbedder};
#[cfg(feature = "multilingual-embed")]
pub use multilingual::UseEmbedder;
#[cfg(feature = "openai-embeddings")]
pub use openai::OpenAiEmbedder;
#[cfg(feature = "local-embed")]
pub use toolbelt_embed::Precision as EmbedPrecision;

use crate::decision::{RouteDecision, RouteRequest, ScoredTool};
use crate::error::RouteError;
use crate::index::{FastMap, Scored};
use crate::router::Router;
use crate::tool_text::{Fnv, ToolText};

/// Which text of a tool is embedded. A router can embed several views of each tool
/// ([`EmbeddingRouter::with_views`]); the query is embedded once and compared with each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolView {
    /// Name in words, description, parameter names and tags ([`ToolText::joined`]; the default).
    Joined,
    /// `name: description` only ([`ToolText::name_description`]): what the tool is for,
    /// without parameter names diluting it.
    NameDescription,
    /// [`ToolView::Joined`] plus parameter descriptions and enum values ([`ToolText::full`]).
    Full,
}

impl ToolView {
    /// The text of `text` this view embeds.
    pub fn text(self, text: &ToolText) -> String {
        match self {
            Self::Joined => text.joined(),
            Self::NameDescription => text.name_description(),
            Self::Full => text.full(),
        }
    }

    /// Parses `joined`, `name-description` or `full`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "joined" => Some(Self::Joined),
            "name-description" => Some(Self::NameDescription),
            "full" => Some(Self::Full),
            _ => None,
        }
    }
}

/// Queries per embedder call in [`EmbeddingRouter::embed_queries`] (at least).
const QUERY_BATCH: usize = 256;

/// Query vectors kept by default ([`EmbeddingRouter::with_recent_queries`]): 1,024 of
/// MiniLM's are 1.6 MB.
pub const RECENT_QUERIES: usize = 1024;

#[derive(Debug, Default)]
struct Cache {
    /// Unit vectors by (model, tool text) fingerprint.
    vectors: FastMap<u64, Arc<[f32]>>,
    /// Whether the disk cache was read into `vectors`.
    disk_loaded: bool,
    /// The last handle seen per tool name and its key per view, to skip re-reading unchanged tools.
    keys: FastMap<String, (ToolHandle, Vec<u64>)>,
    computed: u64,
    /// Query vectors made ahead by [`EmbeddingRouter::embed_queries`], by query text.
    queries: FastMap<String, Arc<[f32]>>,
    /// The vectors of the last queries embedded when ranked, by query text, least recently
    /// used first out (none when [`EmbeddingRouter::with_recent_queries`] is 0).
    recent: Option<hashlink::LruCache<String, Arc<[f32]>>>,
    /// The last toolset prepared whole and its vectors: a request over the same view
    /// of the same snapshot skips the per-tool lookups (and their allocations).
    last: Option<(Toolset, Arc<[ViewVectors]>)>,
}

/// Each tool's name and vector, in toolset order.
type Prepared = Arc<[(String, Arc<[f32]>)]>;

/// One view's tool vectors: by tool, and those of the model's length side by side in one
/// block, which the scores read as one stream. (With each vector in an allocation of its
/// own, a jump in memory per tool, a request over 2,000 tools took 1.4 times as long:
/// `hybrid_route_embedded` in `benches/route.rs`.)
#[derive(Debug)]
struct ViewVectors {
    tools: Prepared,
    /// The vectors of `dims` values, one after another.
    block: Vec<f32>,
    /// Per vector of `block`: its tool's index in `tools`.
    rows: Vec<u32>,
    dims: usize,
    /// Each tool's index in `tools`, by name.
    by_name: Arc<FastMap<Arc<str>, u32>>,
}

impl ViewVectors {
    fn new(tools: Prepared) -> Self {
        let dims = tools
            .iter()
            .map(|(_, v)| v.len())
            .find(|&n| n > 0)
            .unwrap_or(0);
        let mut block = Vec::with_capacity(tools.len() * dims);
        let mut rows = Vec::with_capacity(tools.len());
        let mut by_name = FastMap::default();
        for (i, (name, v)) in tools.iter().enumerate() {
            if dims > 0 && v.len() == dims {
                block.extend_from_slice(v);
                rows.push(i as u32);
            }
            by_name.insert(Arc::from(name.as_str()), i as u32);
        }
        Self {
            tools,
            block,
            rows,
            dims,
            by_name: Arc::new(by_name),
        }
    }
}

/// Routes by cosine similarity between the input and each tool's text.
///
/// Tool vectors are cached by a fingerprint of the model id and the tool's
/// text, so they are computed once and again only when a tool's text changes;
/// each request embeds only the input, and not even that when the same input was ranked
/// lately ([`EmbeddingRouter::with_recent_queries`]). Cloning shares the cache.
#[derive(Clone)]
pub struct EmbeddingRouter {
    embedder: Arc<dyn Embedder>,
    cache: Arc<Mutex<Cache>>,
    disk: Option<Arc<std::path::PathBuf>>,
    progress: Option<Arc<dyn Fn(usize, usize) + Send + Sync>>,
    top_k: usize,
    min_similarity: f32,
    batch_size: usize,
    views: Arc<[ToolView]>,
}

impl std::fmt::Debug for EmbeddingRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingRouter")
            .field("model", &self.embedder.model())
            .field("top_k", &self.top_k)
            .finish_non_exhaustive()
    }
}

impl EmbeddingRouter {
    /// A router using `embedder`, sending 5 tools.
    pub fn new(embedder: impl Embedder) -> Self {
        Self::from_arc(Arc::new(embedder))
    }

    /// Like [`EmbeddingRouter::new`] for a shared embedder.
    pub fn from_arc(embedder: Arc<dyn Embedder>) -> Self {
        Self {
            embedder,
            cache: Arc::new(Mutex::new(Cache {
                recent: Some(hashlink::LruCache::new(RECENT_QUERIES)),
                ..Cache::default()
            })),
            disk: None,
            progress: None,
            top_k: 5,
            min_similarity: 0.0,
            batch_size: 64,
            views: Arc::new([ToolView::Joined]),
        }
    }

    /// Embeds these views of each tool (default [`ToolView::Joined`] alone; an empty list
    /// keeps the default). Each view is one more vector per tool and one more ranking for
    /// [`EmbeddingRouter::rank_views`]; [`EmbeddingRouter::rank`] scores a tool by its best view.
    /// The query is still embedded once.
    #[must_use]
    pub fn with_views(mut self, views: impl IntoIterator<Item = ToolView>) -> Self {
        let mut list: Vec<ToolView> = Vec::new();
        for v in views {
            if !list.contains(&v) {
                list.push(v);
            }
        }
        if !list.is_empty() {
            self.views = list.into();
        }
        self
    }

    /// The views embedded per tool.
    pub fn views(&self) -> &[ToolView] {
        &self.views
    }

    /// Sends the best `k` tools (default 5).
    #[must_use]
    pub fn with_top_k(mut self, k: usize) -> Self {
        self.top_k = k.max(1);
        self
    }

    /// Falls back to every tool when the best cosine is below `similarity` (default 0).
    #[must_use]
    pub fn with_min_similarity(mut self, similarity: f32) -> Self {
        self.min_similarity = similarity;
        self
    }

    /// Keeps tool vectors in `dir` too, one file per model
    /// (`<dir>/<model>.vectors`), keyed like the memory cache by a fingerprint of
    /// the model id and the tool's text: a restart re-embeds only tools whose text
    /// changed. A file that cannot be read or written is logged and ignored.
    #[must_use]
    pub fn with_disk_cache(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        let dir: std::path::PathBuf = dir.into();
        let file: String = self
            .embedder
            .model()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.disk = Some(Arc::new(dir.join(format!("{file}.vectors"))));
        self
    }

    /// Calls `progress(done, total)` as tool texts are embedded by [`EmbeddingRouter::prepare`]
    /// (only when some must be; `total` counts the tools missing from the caches).
    #[must_use]
    pub fn with_progress(
        mut self,
        progress: impl Fn(usize, usize) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    /// Keeps the vectors of the last `n` distinct queries embedded when ranked (default
    /// [`RECENT_QUERIES`]; 0 keeps none), so an input ranked again (an agent's next turn on
    /// the same message, a retried request, a routine's fixed prompt) skips the encoder. A
    /// query's vector depends on its text alone, so a kept one is the one the encoder would
    /// make. The cache is shared with this router's clones, and replaced by this call.
    #[must_use]
    pub fn with_recent_queries(self, n: usize) -> Self {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recent = (n > 0).then(|| hashlink::LruCache::new(n));
        self
    }

    /// Texts per embedding call (default 64).
    #[must_use]
    pub fn with_batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }

    /// The embedder's model id (what its vectors are cached under).
    pub fn model(&self) -> &str {
        self.embedder.model()
    }

    /// The minimum similarity for a confident decision.
    pub fn min_similarity(&self) -> f32 {
        self.min_similarity
    }

    /// How many tool vectors were computed so far (cache misses).
    pub fn computed(&self) -> u64 {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .computed
    }

    /// Embeds every tool of `toolset` not cached yet; gives each tool's name and vector of
    /// the first view ([`EmbeddingRouter::with_views`]), in toolset order.
    ///
    /// # Errors
    /// [`RouteError::Backend`] when the embedder fails or answers with the wrong number of vectors.
    pub async fn prepare(&self, toolset: &Toolset) -> Result<Prepared, RouteError> {
        let views = self.prepare_views(toolset).await?;
        Ok(views
            .first()
            .map_or_else(|| Arc::from(Vec::new()), |view| Arc::clone(&view.tools)))
    }

    /// Like [`EmbeddingRouter::prepare`], one list per view.
    async fn prepare_views(&self, toolset: &Toolset) -> Result<Arc<[ViewVectors]>, RouteError> {
        let mut missing: Vec<(u64, String)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut keyed: Vec<(String, Vec<u64>)> = Vec::with_capacity(toolset.len());
        {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((set, prepared)) = &cache.last
                && set.same_view(toolset)
            {
                return Ok(Arc::clone(prepared));
            }
            if let Some(path) = &self.disk
                && !cache.disk_loaded
            {
                cache.disk_loaded = true;
                match disk::read(path) {
                    Ok(found) => {
                        tracing::debug!(vectors = found.len(), path = %path.display(), "embedding cache read");
                        cache.vectors.extend(found);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        tracing::warn!(error = %e, path = %path.display(), "embedding cache unreadable; ignoring it")
                    }
                }
            }
            for tool in toolset.iter() {
                let name = tool.name().as_str();
                let keys = match cache.keys.get(name) {
                    Some((handle, keys)) if handle.ptr_eq(tool) => keys.clone(),
                    _ => {
                        let text = ToolText::from_spec(tool.spec());
                        let keys: Vec<u64> = self
                            .views
                            .iter()
                            .map(|v| self.key_of_text(&v.text(&text)))
                            .collect();
                        cache
                            .keys
                            .insert(name.to_owned(), (tool.clone(), keys.clone()));
                        keys
                    }
                };
                let mut text = None;
                for (view, key) in self.views.iter().zip(&keys) {
                    if !cache.vectors.contains_key(key) && seen.insert(*key) {
                        let text = text.get_or_insert_with(|| ToolText::from_spec(tool.spec()));
                        missing.push((*key, view.text(text)));
                    }
                }
                keyed.push((name.to_owned(), keys));
            }
        }
        let total = missing.len();
        let mut done = 0usize;
        for chunk in missing.chunks(self.batch_size) {
            if let Some(progress) = &self.progress {
                progress(done, total);
            }
            let texts: Vec<String> = chunk.iter().map(|(_, t)| t.clone()).collect();
            let vectors = self.embed_checked(&texts).await?;
            if let Some(path) = &self.disk {
                let records: Vec<(u64, &[f32])> = chunk
                    .iter()
                    .zip(&vectors)
                    .map(|((key, _), v)| (*key, &v[..]))
                    .collect();
                if let Err(e) = disk::append(path, &records) {
                    tracing::warn!(error = %e, path = %path.display(), "embedding cache not written");
                }
            }
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            for ((key, _), v) in chunk.iter().zip(vectors) {
                cache.vectors.insert(*key, v);
                cache.computed += 1;
            }
            done += chunk.len();
        }
        if total > 0
            && let Some(progress) = &self.progress
        {
            progress(total, total);
        }
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let prepared: Arc<[ViewVectors]> = (0..self.views.len())
            .map(|i| {
                ViewVectors::new(
                    keyed
                        .iter()
                        .filter_map(|(name, keys)| {
                            keys.get(i)
                                .and_then(|key| cache.vectors.get(key))
                                .map(|v| (name.clone(), Arc::clone(v)))
                        })
                        .collect::<Prepared>(),
                )
            })
            .collect();
        // Every tool has its vectors now and a snapshot never changes, so the answer
        // holds for as long as the view is the same.
        cache.last = Some((toolset.clone(), Arc::clone(&prepared)));
        Ok(prepared)
    }

    /// Embeds `queries` ahead of routing them, in batches, so that [`rank`](Self::rank)
    /// finds their vectors made: a batch of texts reads each weight of the model once
    /// where one query at a time reads them all per query (for USE-multilingual on
    /// short queries, most of the cost). The vectors replace those of an earlier call
    /// and stay until the next one; a query not among them is embedded when ranked,
    /// as without this call. Returns how many distinct queries were embedded.
    ///
    /// # Errors
    /// [`RouteError::Backend`] when the embedder fails (the earlier vectors are then
    /// gone and every query is embedded when ranked).
    pub async fn embed_queries(&self, queries: &[String]) -> Result<usize, RouteError> {
        let mut seen = std::collections::HashSet::new();
        let texts: Vec<String> = queries
            .iter()
            .map(|q| crate::index::truncate(q, crate::text::MAX_QUERY_BYTES))
            .filter(|q| !q.trim().is_empty() && seen.insert(*q))
            .map(str::to_owned)
            .collect();
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .queries
            .clear();
        let mut made = FastMap::default();
        for chunk in texts.chunks(self.batch_size.max(QUERY_BATCH)) {
            let vectors = self.embed_checked(chunk).await?;
            made.extend(chunk.iter().cloned().zip(vectors));
        }
        let n = made.len();
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .queries = made;
        Ok(n)
    }

    /// The cache key of a tool text: the [`ToolView::Joined`] text keeps the key it had
    /// before views existed, so vector files written then stay valid.
    fn key_of_text(&self, text: &str) -> u64 {
        let mut h = Fnv::default();
        h.write(self.embedder.model());
        h.write(text);
        h.0
    }

    async fn embed_checked(&self, texts: &[String]) -> Result<Vec<Arc<[f32]>>, RouteError> {
        let vectors = self.embedder.embed(texts).await?;
        if vectors.len() != texts.len() {
            return Err(RouteError::Backend {
                backend: "embedder",
                message: format!(
                    "model {} returned {} vectors for {} texts",
                    self.embedder.model(),
                    vectors.len(),
                    texts.len()
                ),
            });
        }
        Ok(vectors.into_iter().map(|v| normalize(v).into()).collect())
    }

    /// The best `k` tools of `toolset` for `query`, best first, scored by cosine.
    ///
    /// # Errors
    /// [`RouteError::Backend`] when the embedder fails.
    pub async fn rank(
        &self,
        toolset: &Toolset,
        query: &str,
        k: usize,
    ) -> Result<Vec<ScoredTool>, RouteError> {
        if self.views.len() <= 1 {
            let mut views = self.rank_views(toolset, query, k).await?;
            return Ok(views.pop().unwrap_or_default());
        }
        let views = self.rank_views(toolset, query, usize::MAX).await?;
        // A tool's best view: a request may match what a tool is for or one of its parameters.
        let mut best: FastMap<String, f32> = FastMap::default();
        for hit in views.into_iter().flatten() {
            let entry = best.entry(hit.name).or_insert(f32::NEG_INFINITY);
            *entry = entry.max(hit.score);
        }
        let mut hits: Vec<ScoredTool> = best
            .into_iter()
            .map(|(name, score)| ScoredTool { name, score })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.name.cmp(&b.name))
        });
        hits.truncate(k);
        Ok(hits)
    }

    /// The best `k` tools of `toolset` for `query` by each view ([`EmbeddingRouter::with_views`]),
    /// one ranking per view in the order of the views, best first, scored by cosine. The
    /// query is embedded once. A text the model cannot read gives empty rankings.
    ///
    /// # Errors
    /// [`RouteError::Backend`] when the embedder fails.
    pub async fn rank_views(
        &self,
        toolset: &Toolset,
        query: &str,
        k: usize,
    ) -> Result<Vec<Vec<ScoredTool>>, RouteError> {
        let views = self.score_views(toolset, query, k).await?;
        Ok(views.into_iter().map(|v| v.head().to_vec()).collect())
    }

    /// Each view's cosine scores of every tool of `toolset` for `query` (by index in the
    /// view's tools), only the best `head` of them named and in order ([`Scored`]): what
    /// z-score fusion reads (every tool's
    /// score for the mean and spread, names for the few it ranks) without naming or
    /// sorting thousands of tools per request.
    pub(crate) async fn score_views(
        &self,
        toolset: &Toolset,
        query: &str,
        head: usize,
    ) -> Result<Vec<Scored>, RouteError> {
        let views = self.prepare_views(toolset).await?;
        let query = crate::index::truncate(query, crate::text::MAX_QUERY_BYTES);
        let known = {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            match cache.queries.get(query) {
                Some(q) => Some(Arc::clone(q)),
                None => cache
                    .recent
                    .as_mut()
                    .and_then(|recent| recent.get(query).cloned()),
            }
        };
        let q = match known {
            Some(q) => q,
            None => {
                let q = self
                    .embed_checked(&[query.to_owned()])
                    .await?
                    .pop()
                    .unwrap_or_else(|| Arc::from(Vec::new()));
                let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(recent) = cache.recent.as_mut() {
                    recent.insert(query.to_owned(), Arc::clone(&q));
                }
                q
            }
        };
        let mut out = Vec::with_capacity(views.len());
        for view in views.iter() {
            let hits = if q.is_empty() || q.len() != view.dims || head == 0 {
                Vec::new()
            } else {
                pulp::Arch::new().dispatch(Scores { query: &q, view })
            };
            out.push(Scored::new(
                &hits,
                view.tools.len(),
                Arc::clone(&view.by_name),
                head,
                |i| Some(view.tools[i as usize].0.clone()),
            ));
        }
        Ok(out)
    }

    async fn decide(&self, request: &RouteRequest) -> Result<RouteDecision, RouteError> {
        if request.input.trim().is_empty() {
            return Ok(RouteDecision::fallback(
                "embedding",
                &request.toolset,
                "empty input",
            ));
        }
        let hits = self
            .rank(&request.toolset, &request.input, self.top_k)
            .await?;
        Ok(match hits.first() {
            Some(best) if best.score >= self.min_similarity => {
                let reason = format!("embedding: best {} ({:.3})", best.name, best.score);
                RouteDecision::tools("embedding", hits, reason)
            }
            _ => RouteDecision::fallback(
                "embedding",
                &request.toolset,
                format!(
                    "embedding: no tool reaches similarity {:.2}",
                    self.min_similarity
                ),
            ),
        })
    }
}

impl Router for EmbeddingRouter {
    fn name(&self) -> &'static str {
        "embedding"
    }

    fn route(
        &self,
        request: &RouteRequest,
    ) -> impl Future<Output = Result<RouteDecision, RouteError>> + Send {
        self.decide(request)
    }
}

/// The on-disk vector file: `TBV1`, then records of (key u64, dims u32, dims × f32), little-endian.
mod disk {
    use std::io::{BufWriter, Read, Write};
    use std::path::Path;
    use std::sync::Arc;

    const MAGIC: &[u8; 4] = b"TBV1";
    /// More dimensions than any sentence model has: a corrupt record.
    const MAX_DIMS: usize = 1 << 16;

    pub(super) fn read(path: &Path) -> std::io::Result<Vec<(u64, Arc<[f32]>)>> {
        let mut bytes = Vec::new();
        std::fs::File::open(path)?.read_to_end(&mut bytes)?;
        let bad =
            |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
        let rest = bytes
            .strip_prefix(MAGIC)
            .ok_or_else(|| bad("not a toolbelt vector file"))?;
        let mut out = Vec::new();
        let mut at = 0usize;
        // A record cut short (a crash while appending) ends the file.
        while rest.len() >= at + 12 {
            let key = u64::from_le_bytes(rest[at..at + 8].try_into().map_err(|_| bad("key"))?);
            let dims =
                u32::from_le_bytes(rest[at + 8..at + 12].try_into().map_err(|_| bad("dims"))?)
                    as usize;
            if dims > MAX_DIMS {
                return Err(bad("a record has too many dimensions"));
            }
            let end = at + 12 + dims * 4;
            if rest.len() < end {
                break;
            }
            let v: Vec<f32> = rest[at + 12..end]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            out.push((key, Arc::from(v)));
            at = end;
        }
        Ok(out)
    }

    pub(super) fn append(path: &Path, records: &[(u64, &[f32])]) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let fresh = file.metadata()?.len() == 0;
        let mut w = BufWriter::new(file);
        if fresh {
            w.write_all(MAGIC)?;
        }
        for (key, v) in records {
            w.write_all(&key.to_le_bytes())?;
            let dims =
                u32::try_from(v.len()).map_err(|_| std::io::Error::other("vector too long"))?;
            w.write_all(&dims.to_le_bytes())?;
            for x in *v {
                w.write_all(&x.to_le_bytes())?;
            }
        }
        w.flush()
    }
}

fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in &mut v {
            *x /= norm;
        }
    }
    v
}

/// The query's dot product with every tool vector of its view's block (unit vectors: the
/// cosine), as (tool index, score), in one pass with the CPU's widest SIMD vectors. The
/// query has the block's length.
struct Scores<'a> {
    query: &'a [f32],
    view: &'a ViewVectors,
}

impl pulp::WithSimd for Scores<'_> {
    type Output = Vec<(u32, f32)>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> Self::Output {
        // Plain loops, no closures: a closure is compiled without the SIMD target
        // features, and its intrinsics become calls.
        let (q, q_tail) = S::as_simd_f32s(self.query);
        let (q4, q_rest) = q.as_chunks::<4>();
        let view = self.view;
        let mut out = Vec::with_capacity(view.rows.len());
        for (v, &i) in view.block.chunks_exact(view.dims).zip(&view.rows) {
            let (v, v_tail) = S::as_simd_f32s(v);
            let (v4, v_rest) = v.as_chunks::<4>();
            // Four independent sums keep the multiply-adds from waiting on each other.
            let mut sums = [simd.splat_f32s(0.0); 4];
            for (q, v) in q4.iter().zip(v4) {
                for ((sum, &q), &v) in sums.iter_mut().zip(q).zip(v) {
                    *sum = simd.mul_add_e_f32s(q, v, *sum);
                }
            }
            for (&q, &v) in q_rest.iter().zip(v_rest) {
                sums[0] = simd.mul_add_e_f32s(q, v, sums[0]);
            }
            let sum = simd.add_f32s(
                simd.add_f32s(sums[0], sums[1]),
                simd.add_f32s(sums[2], sums[3]),
            );
            let mut tail = 0f32;
            for (a, b) in q_tail.iter().zip(v_tail) {
                tail += a * b;
            }
            out.push((i, simd.reduce_sum_f32s(sum) + tail));
        }
        out
    }
}

/// The error and its sources on one line (the route error carries text only).
#[cfg(any(feature = "local-embed", feature = "multilingual-embed"))]
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}
