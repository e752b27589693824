//! [`LexicalRouter`]: BM25 routing over an index kept in step with the toolset.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use toolbelt_core::{ToolHandle, Toolset};

use crate::decision::{RouteDecision, RouteRequest, ScoredTool};
use crate::error::RouteError;
use crate::fit::ValueProfile;
use crate::index::{FastMap, LexicalConfig, LexicalIndex, Scored};
use crate::learn::{LearnedUsage, SharedUsage};
use crate::router::Router;
use crate::tool_text::ToolText;

/// One index and the toolset it was built for; never changed once published.
#[derive(Debug, Clone)]
struct State {
    index: LexicalIndex,
    /// The toolset indexed. A request over the same view of the same registry snapshot
    /// (`Registry::all` or `select` while the registry is unchanged, as `/route` without an
    /// agent asks) finds this state without walking its tools; a toolset made another way
    /// (`Toolset::from_tools`, as an agent's view is) is matched tool by tool.
    toolset: Toolset,
    /// The learned examples indexed with them.
    learned: Option<SharedUsage>,
    /// What the value-fit signal reads of each tool's schema, by tool name.
    values: FastMap<String, ValueProfile>,
}

/// Indexes kept for different toolsets at once (e.g. agents with different views).
const SLOTS: usize = 4;

#[derive(Debug)]
struct Slot {
    state: Arc<State>,
    last_used: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    config: LexicalConfig,
    /// Published indexes; searched under a read lock, replaced whole.
    slots: RwLock<Vec<Slot>>,
    /// Held while an index is built, so two requests do not build the same one.
    building: Mutex<()>,
    clock: AtomicU64,
    /// Learned example requests (opt-in), indexed with each tool.
    learned: RwLock<Option<SharedUsage>>,
}

fn same_usage(a: Option<&SharedUsage>, b: Option<&SharedUsage>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

impl State {
    fn matches(&self, toolset: &Toolset, learned: Option<&SharedUsage>) -> bool {
        same_usage(self.learned.as_ref(), learned)
            && (self.toolset.same_view(toolset)
                || self.toolset.len() == toolset.len()
                    && self
                        .toolset
                        .iter()
                        .zip(toolset.iter())
                        .all(|(a, b)| a.ptr_eq(b)))
    }

    /// How many of `toolset`'s tools this state already holds as they are.
    fn overlap(&self, toolset: &Toolset) -> usize {
        let old: FastMap<&str, &ToolHandle> = self
            .toolset
            .iter()
            .map(|t| (t.name().as_str(), t))
            .collect();
        toolset
            .iter()
            .filter(|t| old.get(t.name().as_str()).is_some_and(|o| o.ptr_eq(t)))
            .count()
    }

    /// Brings the index in line with `toolset` (and `learned`), touching only tools that changed.
    fn sync(&mut self, toolset: &Toolset, learned: Option<&SharedUsage>) {
        let relearn = !same_usage(self.learned.as_ref(), learned);
        let old: FastMap<&str, &ToolHandle> = self
            .toolset
            .iter()
            .map(|t| (t.name().as_str(), t))
            .collect();
        let stale: Vec<String> = self
            .index
            .names()
            .filter(|n| !toolset.contains(n))
            .map(str::to_owned)
            .collect();
        for name in &stale {
            self.index.remove(name);
            self.values.remove(name);
        }
        let (mut added, mut kept) = (0usize, 0usize);
        for tool in toolset.iter() {
            if !relearn
                && old
                    .get(tool.name().as_str())
                    .is_some_and(|t| t.ptr_eq(tool))
            {
                kept += 1;
                continue;
            }
            self.values
                .insert(tool.name().to_string(), ValueProfile::of(tool.spec()));
            let mut text = ToolText::from_spec(tool.spec());
            if let Some(learned) = learned {
                text.examples = learned.examples(tool.name().as_str()).to_vec();
            }
            if self.index.upsert_text(&text) {
                added += 1;
            }
        }
        tracing::debug!(
            removed = stale.len(),
            added,
            kept,
            "lexical index synced with toolset"
        );
        self.toolset = toolset.clone();
        self.learned = learned.cloned();
    }
}

impl Shared {
    fn learned(&self) -> Option<SharedUsage> {
        self.learned
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn find(&self, toolset: &Toolset) -> Option<Arc<State>> {
        let learned = self.learned();
        let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        let slot = slots
            .iter()
            .find(|s| s.state.matches(toolset, learned.as_ref()))?;
        slot.last_used.store(
            self.clock.fetch_add(1, Ordering::Relaxed),
            Ordering::Relaxed,
        );
        Some(Arc::clone(&slot.state))
    }

    /// The index for exactly `toolset`: a published one, or one built now from
    /// the closest published index and published in place of the least recently used.
    fn synced(&self, toolset: &Toolset) -> Arc<State> {
        if let Some(state) = self.find(toolset) {
            return state;
        }
        let _building = self.building.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(state) = self.find(toolset) {
            return state;
        }
        let base = {
            let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
            slots
                .iter()
                .map(|s| (s.state.overlap(toolset), &s.state))
                .filter(|(n, _)| *n > 0)
                .max_by_key(|(n, _)| *n)
                .map(|(_, s)| Arc::clone(s))
        };
        let mut state = match base {
            Some(base) => State::clone(&base),
            None => State {
                index: LexicalIndex::new(self.config.clone()),
                toolset: Toolset::empty(),
                learned: None,
                values: FastMap::default(),
            },
        };
        state.sync(toolset, self.learned().as_ref());
        let state = Arc::new(state);
        let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        if slots.len() >= SLOTS
            && let Some(lru) = slots
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.last_used.load(Ordering::Relaxed))
                .map(|(i, _)| i)
        {
            slots.swap_remove(lru);
        }
        slots.push(Slot {
            state: Arc::clone(&state),
            last_used: AtomicU64::new(self.clock.fetch_add(1, Ordering::Relaxed)),
        });
        state
    }
}

/// Routes with BM25 over tool names, descriptions, parameters and tags.
///
/// The index follows the toolset of each request: the first request indexes
/// every tool; a request with another toolset gets an index made from the
/// closest one kept, re-indexing only tools added, removed or changed
/// (checked by handle identity, then by a fingerprint of the text). Up to
/// four indexes are kept, one per toolset, so requests over different
/// toolsets (agents with different views) can be routed at the same time:
/// every search runs on an index built for exactly its own toolset, never
/// one being changed for another. Cloning shares the indexes. Routing
/// through [`Router::route`] inside a Tokio runtime builds a missing index on
/// the blocking pool (`spawn_blocking`).
#[derive(Debug, Clone)]
pub struct LexicalRouter {
    shared: Arc<Shared>,
    top_k: usize,
    min_score: f32,
}

impl Default for LexicalRouter {
    fn default() -> Self {
        Self::new(LexicalConfig::default())
    }
}

impl LexicalRouter {
    /// A router with `config` and 5 tools per decision.
    pub fn new(config: LexicalConfig) -> Self {
        Self {
            shared: Arc::new(Shared {
                config,
                slots: RwLock::new(Vec::new()),
                building: Mutex::new(()),
                clock: AtomicU64::new(0),
                learned: RwLock::new(None),
            }),
            top_k: 5,
            min_score: 0.0,
        }
    }

    /// Sends the best `k` tools (default 5).
    #[must_use]
    pub fn with_top_k(mut self, k: usize) -> Self {
        self.top_k = k.max(1);
        self
    }

    /// Falls back to every tool when the best score is below `score` (default 0: any match).
    #[must_use]
    pub fn with_min_score(mut self, score: f32) -> Self {
        self.min_score = score;
        self
    }

    /// The index configuration.
    pub fn config(&self) -> &LexicalConfig {
        &self.shared.config
    }

    /// Indexes `usage`'s example requests with each tool (learning from use; opt-in).
    #[must_use]
    pub fn with_learned_usage(self, usage: LearnedUsage) -> Self {
        self.set_learned_usage(Some(usage));
        self
    }

    /// Replaces (or with `None` removes) the learned examples; indexes are re-synced on next use.
    pub fn set_learned_usage(&self, usage: Option<LearnedUsage>) {
        *self
            .shared
            .learned
            .write()
            .unwrap_or_else(PoisonError::into_inner) = usage.map(Arc::new);
    }

    /// Indexes `toolset` now (routing does it on first use otherwise).
    pub fn prepare(&self, toolset: &Toolset) {
        drop(self.synced(toolset));
    }

    /// The best `k` tools of `toolset` for `query`, best first.
    pub fn search(&self, toolset: &Toolset, query: &str, k: usize) -> Vec<ScoredTool> {
        self.synced(toolset).index.search(query, k)
    }

    /// Like [`LexicalRouter::search`], with `english` as the factor on the query's English
    /// words' concepts ([`LexicalIndex::search_scaled`]).
    pub fn search_scaled(
        &self,
        toolset: &Toolset,
        query: &str,
        k: usize,
        english: f32,
    ) -> Vec<ScoredTool> {
        self.synced(toolset).index.search_scaled(query, k, english)
    }

    /// Every tool of `toolset` the words of `query` reach, scored, the best `head` named
    /// ([`Scored`]); `english` scales the concepts of English words as in
    /// [`LexicalRouter::search_scaled`], `None` keeps the configured factor.
    pub(crate) fn scores(
        &self,
        toolset: &Toolset,
        query: &str,
        head: usize,
        english: Option<f32>,
    ) -> Scored {
        let index = &self.synced(toolset).index;
        let english = english.unwrap_or(index.config().english_concept_factor);
        index.scores_scaled(query, head, english)
    }

    /// Runs `f` on the index, synced with `toolset`.
    pub fn with_index<T>(&self, toolset: &Toolset, f: impl FnOnce(&LexicalIndex) -> T) -> T {
        f(&self.synced(toolset).index)
    }

    /// Runs `f` on the value profiles of `toolset`'s tools, by name (kept with the index).
    pub(crate) fn with_values<T>(
        &self,
        toolset: &Toolset,
        f: impl FnOnce(&FastMap<String, ValueProfile>) -> T,
    ) -> T {
        f(&self.synced(toolset).values)
    }

    fn synced(&self, toolset: &Toolset) -> Arc<State> {
        self.shared.synced(toolset)
    }

    /// Whether an index for exactly `toolset` is ready (routing it builds nothing).
    pub fn is_prepared(&self, toolset: &Toolset) -> bool {
        self.shared.find(toolset).is_some()
    }

    /// Like [`LexicalRouter::prepare`], on Tokio's blocking pool when called
    /// inside a runtime and the index must be built (so async workers are not held).
    pub async fn prepare_async(&self, toolset: &Toolset) {
        if self.is_prepared(toolset) {
            return;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            self.prepare(toolset);
            return;
        }
        let (this, set) = (self.clone(), toolset.clone());
        if let Err(e) = tokio::task::spawn_blocking(move || this.prepare(&set)).await {
            tracing::warn!(error = %e, "building the lexical index failed on the blocking pool; building inline");
            self.prepare(toolset);
        }
    }

    /// The decision for `request`, computed synchronously.
    pub fn decide(&self, request: &RouteRequest) -> RouteDecision {
        if request.input.trim().is_empty() {
            return RouteDecision::fallback(self.name_str(), &request.toolset, "empty input");
        }
        let hits = self.search(&request.toolset, &request.input, self.top_k);
        match hits.first() {
            Some(best) if best.score >= self.min_score => {
                let reason = format!("bm25: best {} ({:.2})", best.name, best.score);
                RouteDecision::tools(self.name_str(), hits, reason)
            }
            Some(best) => RouteDecision::fallback(
                self.name_str(),
                &request.toolset,
                format!(
                    "bm25: best score {:.2} below {:.2}",
                    best.score, self.min_score
                ),
            ),
            None => RouteDecision::fallback(
                self.name_str(),
                &request.toolset,
                "bm25: no tool shares a term with the input",
            ),
        }
    }

    fn name_str(&self) -> &'static str {
        "bm25"
    }
}

impl Router for LexicalRouter {
    fn name(&self) -> &'static str {
        self.name_str()
    }

    async fn route(&self, request: &RouteRequest) -> Result<RouteDecision, RouteError> {
        self.prepare_async(&request.toolset).await;
        Ok(self.decide(request))
    }
}
