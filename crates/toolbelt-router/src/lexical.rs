//! [`LexicalRouter`]: BM25 routing over an index kept in step with the toolset.

use std::future::{Future, ready};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use toolbelt_core::{ToolHandle, Toolset};

use crate::decision::{RouteDecision, RouteRequest, ScoredTool};
use crate::error::RouteError;
use crate::index::{FastMap, LexicalConfig, LexicalIndex};
use crate::router::Router;

#[derive(Debug)]
struct State {
    index: LexicalIndex,
    /// The tools indexed, in the order of the toolset they came from.
    order: Vec<ToolHandle>,
}

impl State {
    fn matches(&self, toolset: &Toolset) -> bool {
        self.order.len() == toolset.len()
            && self
                .order
                .iter()
                .zip(toolset.iter())
                .all(|(a, b)| a.ptr_eq(b))
    }

    /// Brings the index in line with `toolset`, touching only tools that changed.
    fn sync(&mut self, toolset: &Toolset) {
        let old: FastMap<&str, &ToolHandle> =
            self.order.iter().map(|t| (t.name().as_str(), t)).collect();
        let stale: Vec<String> = self
            .index
            .names()
            .filter(|n| !toolset.contains(n))
            .map(str::to_owned)
            .collect();
        for name in &stale {
            self.index.remove(name);
        }
        let (mut added, mut kept) = (0usize, 0usize);
        for tool in toolset.iter() {
            if old
                .get(tool.name().as_str())
                .is_some_and(|t| t.ptr_eq(tool))
            {
                kept += 1;
            } else if self.index.upsert(tool.spec()) {
                added += 1;
            }
        }
        tracing::debug!(
            removed = stale.len(),
            added,
            kept,
            "lexical index synced with toolset"
        );
        self.order = toolset.iter().cloned().collect();
    }
}

/// Routes with BM25 over tool names, descriptions, parameters and tags.
///
/// The index follows the toolset of each request: the first request indexes
/// every tool; later ones re-index only tools added, removed or changed
/// (checked by handle identity, then by a fingerprint of the text). Cloning
/// shares the index.
#[derive(Debug, Clone)]
pub struct LexicalRouter {
    state: Arc<RwLock<State>>,
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
            state: Arc::new(RwLock::new(State {
                index: LexicalIndex::new(config),
                order: Vec::new(),
            })),
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

    /// Indexes `toolset` now (routing does it on first use otherwise).
    pub fn prepare(&self, toolset: &Toolset) {
        drop(self.synced(toolset));
    }

    /// The best `k` tools of `toolset` for `query`, best first.
    pub fn search(&self, toolset: &Toolset, query: &str, k: usize) -> Vec<ScoredTool> {
        self.synced(toolset).index.search(query, k)
    }

    /// Runs `f` on the index, synced with `toolset`.
    pub fn with_index<T>(&self, toolset: &Toolset, f: impl FnOnce(&LexicalIndex) -> T) -> T {
        f(&self.synced(toolset).index)
    }

    fn synced(&self, toolset: &Toolset) -> RwLockReadGuard<'_, State> {
        {
            let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
            if state.matches(toolset) {
                return state;
            }
        }
        {
            let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
            if !state.matches(toolset) {
                state.sync(toolset);
            }
        }
        self.state.read().unwrap_or_else(PoisonError::into_inner)
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

    fn route(
        &self,
        request: &RouteRequest,
    ) -> impl Future<Output = Result<RouteDecision, RouteError>> + Send {
        ready(Ok(self.decide(request)))
    }
}
