//! [`HybridRouter`]: the default router, fusing lexical, keyword and embedding rankings.

use toolbelt_core::Toolset;

use crate::decision::{BoundedFallback, RouteDecision, RouteRequest, ScoredTool};
use crate::embedding::EmbeddingRouter;
use crate::error::RouteError;
use crate::fit::ValueFit;
use crate::index::{FastMap, Scored};
use crate::keyword::KeywordRouter;
use crate::learn::{LearnedUsage, RequestIndex};
use crate::lexical::LexicalRouter;
use crate::router::Router;
use crate::search_tools::SearchTools;
use crate::skills::SkillSet;

/// A latest turn of at most this many words (a Han, kana or Hangul letter counting as one)
/// may be elliptical ([`HybridConfig::join_unsure_turns`]).
const SHORT_TURN_WORDS: usize = 6;

/// How rankings are combined.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Fusion {
    /// Reciprocal rank fusion: `sum(weight / (k + rank))`.
    Rrf {
        /// The rank offset (60 in the original paper).
        k: f32,
    },
    /// Weighted sum of scores normalised by each ranking's best score.
    Scores,
    /// Weighted sum of z-scores: each ranking's scores less their mean over the whole
    /// toolset, divided by their standard deviation, computed per request. A tool a
    /// lexical ranking does not list scores 0 there. Signals on different scales (BM25,
    /// cosines, keyword hits) then count alike without weights set by hand for a catalog;
    /// a ranking whose scores are all equal adds nothing. A request no embedding ranked
    /// (no model, or a model that does not read its script), and any request of a router
    /// without the MiniLM embedding (USE alone), is fused as with [`Fusion::Scores`]: the
    /// adaptive cut and the keyword groups' weight were set for that.
    ZScore,
}

/// What the hybrid router does when no ranking is confident.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LowConfidence {
    /// Send every tool (the fallback when the router is unsure) while the toolset has at most
    /// [`HybridConfig::all_tools_limit`] tools; above it, send the best
    /// [`HybridConfig::bounded_top`] plus `search_tools` (a bounded fallback).
    AllTools,
    /// Send this many best tools (plus pinned ones) instead of the adaptive cut.
    TopK(usize),
    /// Send no tools: the model answers from what it knows (a greeting, general
    /// knowledge). For small models, which call whatever tool they are offered;
    /// tools used earlier in the conversation are still sent when
    /// [`HybridConfig::keep_used`] is on.
    NoTools,
}

/// Options of [`HybridRouter`]; start from `HybridConfig::default()`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HybridConfig {
    /// Candidates taken from each ranking.
    pub candidates: usize,
    /// How rankings are combined.
    pub fusion: Fusion,
    /// Weight of the lexical ranking.
    pub lexical_weight: f32,
    /// Weight of the keyword groups.
    pub keyword_weight: f32,
    /// Weight of the embedding ranking (default 1.5: best on the eval set's dev split,
    /// see `docs/ROUTING.md`; the CLI's `--embedding-weight` uses the same default).
    pub embedding_weight: f32,
    /// Fewest ranked tools sent (the floor of adaptive k).
    pub min_k: usize,
    /// Most ranked tools sent (the ceiling of adaptive k).
    pub max_k: usize,
    /// A tool is sent while its fused score is at least this share of the best one.
    pub relative_cutoff: f32,
    /// Tools always sent when present (the core set, `search_tools`).
    pub pinned: Vec<String>,
    /// Whether tools used earlier in the conversation are kept.
    pub keep_used: bool,
    /// Also send the other tools of a chosen tool's tag when the tag has at most this many.
    pub expand_groups: Option<usize>,
    /// A lexical best score under this counts as no lexical match.
    pub min_lexical_score: f32,
    /// The lexical ranking alone makes the router confident only when its best
    /// tool holds at least this many distinct words of the request, or one in
    /// its name (default 1). At 2, one rare word shared with a description
    /// ("answer" in `ask_human`'s) is not enough.
    pub min_lexical_words: usize,
    /// What to do when nothing is confident.
    pub low_confidence: LowConfidence,
    /// Most tools sent whole on a low-confidence fallback (default 64; providers refuse
    /// more than 128 tools, and a large catalog's schemas cost more than the request).
    pub all_tools_limit: usize,
    /// Ranked tools sent on a bounded fallback (default 20), plus `search_tools`.
    pub bounded_top: usize,
    /// Weight of the earlier turns of a conversation ([`RouteRequest::recent`]) in the
    /// lexical ranking, relative to the latest turn's 1 (default 0.4; 0 ignores them).
    pub context_weight: f32,
    /// Most skills chosen per turn (default 2); a skill needs a BM25 score of at least
    /// `min_lexical_score` and at least `relative_cutoff` of the best skill's.
    pub max_skills: usize,
    /// Weight of the ranking voted by similar past requests (learning from use; default 0.5).
    pub learned_weight: f32,
    /// Past requests consulted per query (default 5).
    pub learned_neighbours: usize,
    /// Weight of the multilingual embedding ranking ([`HybridRouter::with_multilingual_embedding`])
    /// for input not mostly in Chinese, Japanese or Korean script (0 skips it there).
    pub multilingual_weight: f32,
    /// Whether the multilingual ranking also ranks input not mostly in CJK script when an
    /// (English) embedding ranking ([`HybridRouter::with_embedding`]) is there too (default
    /// false: MiniLM reads English better, and USE fused beside it lowered English recall;
    /// see `docs/ROUTING.md`).
    pub multilingual_with_embedding: bool,
    /// Weight of the multilingual embedding ranking for input mostly in Han, kana or Hangul.
    pub cjk_multilingual_weight: f32,
    /// For input mostly in Han, kana or Hangul, the lexical weight is multiplied by this
    /// when a multilingual embedding ranked the tools (character bigrams match noise there).
    pub cjk_lexical_factor: f32,
    /// Whether an embedding ranking alone makes the router confident (default true).
    /// An embedding always has a nearest tool, so with this on a router with embeddings
    /// is never unsure; [`LowConfidence::NoTools`] needs it off to answer a greeting or
    /// a general question without tools. The embedding still ranks either way.
    pub embedding_confidence: bool,
    /// When the latest turn's words match no tool surely (and no keyword group), rank the
    /// previous user turn and the latest one together (default true): an elliptical turn
    /// ("now do the same for staging", "英伟达呢？") says too little alone, and its
    /// embedding then ranks whatever is nearest to a few words.
    pub join_unsure_turns: bool,
    /// Tools a request about the workspace always gets (default none: the rule is off).
    /// With some, a request that names a file, folder, directory, project or repository (in
    /// English or Chinese, or a file name such as `data.csv`) is never answered without
    /// tools. If it only asks for facts (no verb of change such as "write", "change", "set …
    /// to", "改"), it gets no mutating tool and every one of these tools, in their order, in
    /// place of the lowest-ranked others (the best kept); if it asks for a change, it gets
    /// them only when none of them, nor another tool of their groups, is ranked. File names
    /// then read as the word "file" for BM25 and the value fit (`logs/app.log` does not rank
    /// `git`). A keyword group holding one of these tools makes the router sure only for such
    /// a request or with two of its keywords ("write a poem" is not a file to write).
    /// `toolbelt run` and stored agents on small models get `file_search`, `file_read` and
    /// `list_dir` (`toolbelt_host::for_profile`).
    pub workspace_tools: Vec<String>,
    /// With [`HybridConfig::workspace_tools`]: the tool offered first for a question for facts
    /// that names a file (`data/settings.json`), default none. `for_profile` sets `file_read`:
    /// offered `file_search` first for "What theme is set in data/settings.json?", the 1.5B
    /// model listed files until the loop guard stopped it. A request to change a file it
    /// names gets this tool too, second, in place of the lowest-ranked other beyond `max_k`:
    /// a file is read before it is edited (MiniLM ranked `http_get` and `git_write` above
    /// `file_read` for "In config.txt, change the port from 8080 to 9090.").
    pub named_file_tool: Option<String>,
    /// Weight of the value fit (default 0.5): among the best [`HybridConfig::candidates`],
    /// a tool whose required parameters ask for a kind of value the request lacks (a
    /// number, a date, an e-mail address) loses up to this much, and one whose enum
    /// values the request names gains this much, in units of the fused score (its
    /// spread under [`Fusion::ZScore`], the best score otherwise). 0 turns it off.
    pub value_weight: f32,
    /// The BM25 searches' [`crate::LexicalConfig::english_concept_factor`] (the weight of a request's
    /// English synonyms from the concept lexicon) when the router has MiniLM (an English
    /// embedding ranking, [`HybridRouter::with_embedding`] or its slot); default 0.
    /// MiniLM brings synonyms of its own, and at 0 the default ranked best on the dev splits
    /// of three public sets (docs/ROUTING.md, "Public sets"). Without MiniLM the lexical
    /// router's own factor holds. Read per request, so a MiniLM that arrives later counts.
    pub minilm_english_concept_factor: f32,
}

impl Default for HybridConfig {
    fn default() -> Self {
        Self {
            candidates: 50,
            fusion: Fusion::ZScore,
            lexical_weight: 1.0,
            keyword_weight: 1.0,
            embedding_weight: 2.0,
            min_k: 3,
            max_k: 10,
            relative_cutoff: 0.5,
            pinned: Vec::new(),
            keep_used: true,
            expand_groups: None,
            min_lexical_score: 1.0,
            min_lexical_words: 1,
            low_confidence: LowConfidence::AllTools,
            all_tools_limit: 64,
            bounded_top: 20,
            context_weight: 0.4,
            max_skills: 2,
            learned_weight: 0.5,
            learned_neighbours: 5,
            multilingual_weight: 1.0,
            multilingual_with_embedding: false,
            cjk_multilingual_weight: 2.0,
            cjk_lexical_factor: 0.5,
            embedding_confidence: true,
            join_unsure_turns: true,
            value_weight: 0.5,
            minilm_english_concept_factor: 0.0,
            workspace_tools: Vec::new(),
            named_file_tool: None,
        }
    }
}

impl HybridConfig {
    /// Sets the floor and ceiling of adaptive k.
    #[must_use]
    pub fn with_k_range(mut self, min_k: usize, max_k: usize) -> Self {
        self.min_k = min_k.max(1);
        self.max_k = max_k.max(self.min_k);
        self
    }

    /// Sets the share of the best fused score a tool needs to be sent.
    #[must_use]
    pub fn with_relative_cutoff(mut self, cutoff: f32) -> Self {
        self.relative_cutoff = cutoff;
        self
    }

    /// Always sends these tools when they are in the toolset.
    #[must_use]
    pub fn with_pinned<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.pinned = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Whether tools used earlier in the conversation are kept (default true).
    #[must_use]
    pub fn with_keep_used(mut self, keep: bool) -> Self {
        self.keep_used = keep;
        self
    }

    /// Expands to whole tags of at most `max_tools` tools (default off).
    #[must_use]
    pub fn with_expand_groups(mut self, max_tools: Option<usize>) -> Self {
        self.expand_groups = max_tools;
        self
    }

    /// Sets the fusion method.
    #[must_use]
    pub fn with_fusion(mut self, fusion: Fusion) -> Self {
        self.fusion = fusion;
        self
    }

    /// Sets what happens when nothing is confident.
    #[must_use]
    pub fn with_low_confidence(mut self, action: LowConfidence) -> Self {
        self.low_confidence = action;
        self
    }

    /// Sets the lexical score under which the lexical ranking is not trusted.
    #[must_use]
    pub fn with_min_lexical_score(mut self, score: f32) -> Self {
        self.min_lexical_score = score;
        self
    }

    /// Sets how many words of the request the best lexical hit must hold
    /// (or one in its name) for the lexical ranking alone to be trusted.
    #[must_use]
    pub fn with_min_lexical_words(mut self, words: usize) -> Self {
        self.min_lexical_words = words;
        self
    }

    /// Sends every tool on a low-confidence fallback only up to `limit` tools;
    /// above it sends the best `top` plus `search_tools`.
    #[must_use]
    pub fn with_bounded_fallback(mut self, limit: usize, top: usize) -> Self {
        self.all_tools_limit = limit;
        self.bounded_top = top.max(1);
        self
    }

    /// Sets the weight of the ranking voted by similar past requests.
    #[must_use]
    pub fn with_learned_weight(mut self, weight: f32) -> Self {
        self.learned_weight = weight.max(0.0);
        self
    }

    /// Sets the weight of earlier conversation turns (0 ignores them).
    #[must_use]
    pub fn with_context_weight(mut self, weight: f32) -> Self {
        self.context_weight = weight.max(0.0);
        self
    }

    /// Whether an embedding ranking alone makes the router confident (see
    /// [`HybridConfig::embedding_confidence`]).
    #[must_use]
    pub fn with_embedding_confidence(mut self, on: bool) -> Self {
        self.embedding_confidence = on;
        self
    }

    /// Sets the tools a request about the workspace always gets (see
    /// [`HybridConfig::workspace_tools`]; empty turns the rule off).
    #[must_use]
    pub fn with_workspace_tools<S: Into<String>>(
        mut self,
        tools: impl IntoIterator<Item = S>,
    ) -> Self {
        self.workspace_tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the tool offered first for a question that names a file (see
    /// [`HybridConfig::named_file_tool`]).
    #[must_use]
    pub fn with_named_file_tool(mut self, tool: impl Into<String>) -> Self {
        self.named_file_tool = Some(tool.into());
        self
    }

    /// Whether an unsure latest turn is ranked together with the previous user turn (see
    /// [`HybridConfig::join_unsure_turns`]).
    #[must_use]
    pub fn with_join_unsure_turns(mut self, on: bool) -> Self {
        self.join_unsure_turns = on;
        self
    }

    /// Sets the weights of the multilingual embedding ranking for other input and for
    /// Chinese, Japanese or Korean input, and the lexical factor for the latter.
    #[must_use]
    pub fn with_multilingual_weights(mut self, other: f32, cjk: f32, cjk_lexical: f32) -> Self {
        self.multilingual_weight = other.max(0.0);
        self.cjk_multilingual_weight = cjk.max(0.0);
        self.cjk_lexical_factor = cjk_lexical.max(0.0);
        self
    }

    /// Sets the weight of the value fit (see [`HybridConfig::value_weight`]; 0 turns it off).
    #[must_use]
    pub fn with_value_weight(mut self, weight: f32) -> Self {
        self.value_weight = weight.max(0.0);
        self
    }

    /// Sets [`HybridConfig::minilm_english_concept_factor`].
    #[must_use]
    pub fn with_minilm_english_concept_factor(mut self, factor: f32) -> Self {
        self.minilm_english_concept_factor = factor.max(0.0);
        self
    }

    /// Whether the multilingual ranking also ranks non-CJK input beside an embedding ranking
    /// (see [`HybridConfig::multilingual_with_embedding`]).
    #[must_use]
    pub fn with_multilingual_beside_embedding(mut self, on: bool) -> Self {
        self.multilingual_with_embedding = on;
        self
    }

    /// Sets the weights of the lexical, keyword and embedding rankings.
    #[must_use]
    pub fn with_weights(mut self, lexical: f32, keyword: f32, embedding: f32) -> Self {
        self.lexical_weight = lexical;
        self.keyword_weight = keyword;
        self.embedding_weight = embedding;
        self
    }
}

/// The default router: lexical (BM25 with concepts), keyword groups and, when
/// configured, embeddings, fused into one ranking cut by an adaptive k.
///
/// The cut keeps tools whose fused score is at least
/// [`HybridConfig::relative_cutoff`] of the best, between `min_k` and
/// `max_k`. Pinned tools and tools used earlier in the conversation are
/// always added. When neither the lexical ranking, the keyword groups nor the
/// embeddings are confident, it does what [`HybridConfig::low_confidence`]
/// says. An embedding failure is logged and routing goes on without it.
#[derive(Debug, Clone)]
pub struct HybridRouter {
    lexical: LexicalRouter,
    learned: Option<std::sync::Arc<RequestIndex>>,
    skills: Option<SkillSet>,
    keyword: Option<KeywordRouter>,
    embedding: Option<EmbeddingRouter>,
    embedding_slot: Option<EmbeddingSlot>,
    multilingual: Option<EmbeddingRouter>,
    multilingual_slot: Option<EmbeddingSlot>,
    config: HybridConfig,
}

/// A multilingual embedding ranking that arrives after the router is built: a server
/// starts routing lexically at once and fills the slot when its encoder has loaded and
/// embedded the tools (see [`HybridRouter::with_multilingual_slot`]). Clones share the slot.
#[derive(Debug, Clone, Default)]
pub struct EmbeddingSlot(std::sync::Arc<std::sync::OnceLock<EmbeddingRouter>>);

impl EmbeddingSlot {
    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fills the slot; every router holding it ranks with `router` from now on.
    ///
    /// # Errors
    /// Gives `router` back when the slot was already filled (the first one stays).
    pub fn fill(&self, router: EmbeddingRouter) -> Result<(), EmbeddingRouter> {
        self.0.set(router)
    }

    /// The router in the slot, once filled.
    pub fn get(&self) -> Option<&EmbeddingRouter> {
        self.0.get()
    }
}

impl Default for HybridRouter {
    fn default() -> Self {
        Self::new(LexicalRouter::default())
    }
}

/// A fused ranking and how confident its inputs were.
#[derive(Debug, Clone, Default)]
pub struct Ranking {
    /// Tools, best first, with fused scores.
    pub tools: Vec<ScoredTool>,
    /// Groups matched by the keyword router.
    pub groups: Vec<String>,
    /// Whether any ranking was confident.
    pub confident: bool,
    /// What each ranking contributed, for logs.
    pub reason: String,
}

impl HybridRouter {
    /// A hybrid router over `lexical`, with no keyword groups or embeddings.
    pub fn new(lexical: LexicalRouter) -> Self {
        Self {
            lexical,
            learned: None,
            skills: None,
            keyword: None,
            embedding: None,
            embedding_slot: None,
            multilingual: None,
            multilingual_slot: None,
            config: HybridConfig::default(),
        }
    }

    /// The router every toolbelt entry point starts from: BM25 with the concept lexicon
    /// ([`LexicalRouter::default`]), the built-in keyword groups ([`KeywordRouter::builtin`])
    /// and adaptive k. Hosts add what they load at run time (an encoder through
    /// [`HybridRouter::with_multilingual_slot`], learned usage) and an agent's settings narrow
    /// its [`HybridConfig`].
    pub fn standard() -> Self {
        Self::new(LexicalRouter::default()).with_keyword(KeywordRouter::builtin())
    }

    /// Adds keyword groups.
    #[must_use]
    pub fn with_keyword(mut self, keyword: KeywordRouter) -> Self {
        self.keyword = Some(keyword);
        self
    }

    /// Learning from use (opt-in): the past requests in `usage` vote for the tools that
    /// served them; a request like one of them ranks those tools higher (weight
    /// [`HybridConfig::learned_weight`]). Tools' own documents are not changed.
    #[must_use]
    pub fn with_learned_usage(mut self, usage: &LearnedUsage) -> Self {
        let config = self.lexical.config().clone();
        self.learned =
            (!usage.is_empty()).then(|| std::sync::Arc::new(RequestIndex::new(usage, config)));
        self
    }

    /// Routes `skills` beside the tools: each decision lists the chosen ones.
    #[must_use]
    pub fn with_skills(mut self, skills: SkillSet) -> Self {
        self.skills = Some(skills);
        self
    }

    /// The skills routed beside tools, if any.
    pub fn skills(&self) -> Option<&SkillSet> {
        self.skills.as_ref()
    }

    /// The skills for `input`: at most `max_skills`, each confidently matched.
    pub fn choose_skills(&self, input: &str) -> Vec<ScoredTool> {
        let cfg = &self.config;
        let Some(skills) = &self.skills else {
            return Vec::new();
        };
        if cfg.max_skills == 0 || input.trim().is_empty() {
            return Vec::new();
        }
        let mut hits = skills.rank(input, cfg.max_skills);
        let best = hits.first().map_or(0.0, |h| h.score);
        hits.retain(|h| h.score >= cfg.min_lexical_score && h.score >= best * cfg.relative_cutoff);
        hits
    }

    /// Adds an embedding ranking.
    #[must_use]
    pub fn with_embedding(mut self, embedding: EmbeddingRouter) -> Self {
        self.embedding = Some(embedding);
        self
    }

    /// Adds an embedding ranking that is filled later ([`EmbeddingSlot::fill`]), like
    /// [`HybridRouter::with_multilingual_slot`] for the (English) embedding of
    /// [`HybridRouter::with_embedding`], which takes precedence.
    #[must_use]
    pub fn with_embedding_slot(mut self, slot: EmbeddingSlot) -> Self {
        self.embedding_slot = Some(slot);
        self
    }

    /// The embedding ranking in use, if any (given, or a filled slot).
    fn embedding(&self) -> Option<&EmbeddingRouter> {
        self.embedding
            .as_ref()
            .or_else(|| self.embedding_slot.as_ref().and_then(EmbeddingSlot::get))
    }

    /// Adds a multilingual embedding ranking (e.g. USE-multilingual), weighted by the
    /// input's script: [`HybridConfig::cjk_multilingual_weight`] for input mostly in
    /// Han, kana or Hangul, [`HybridConfig::multilingual_weight`] otherwise.
    #[must_use]
    pub fn with_multilingual_embedding(mut self, embedding: EmbeddingRouter) -> Self {
        self.multilingual = Some(embedding);
        self
    }

    /// Adds a multilingual embedding ranking that is filled later ([`EmbeddingSlot::fill`]):
    /// until then the router ranks without it. A ranking given by
    /// [`HybridRouter::with_multilingual_embedding`] takes precedence.
    #[must_use]
    pub fn with_multilingual_slot(mut self, slot: EmbeddingSlot) -> Self {
        self.multilingual_slot = Some(slot);
        self
    }

    /// The multilingual embedding ranking in use, if any (given, or a filled slot).
    fn multilingual(&self) -> Option<&EmbeddingRouter> {
        self.multilingual
            .as_ref()
            .or_else(|| self.multilingual_slot.as_ref().and_then(EmbeddingSlot::get))
    }

    /// Builds the lexical index and embeds every tool not cached yet, so the first
    /// request does not pay for it.
    ///
    /// # Errors
    /// [`RouteError::Backend`] when an embedder fails.
    pub async fn prepare(&self, toolset: &Toolset) -> Result<(), RouteError> {
        self.lexical.prepare_async(toolset).await;
        for router in self.embedding().into_iter().chain(self.multilingual()) {
            router.prepare(toolset).await?;
        }
        Ok(())
    }

    /// Embeds a batch of requests' inputs ahead of ranking them (see
    /// [`EmbeddingRouter::embed_queries`]): what `toolbelt route --queries` does before
    /// its first query. Each encoder embeds only the inputs it will rank (with MiniLM
    /// beside it, USE-multilingual ranks CJK inputs only). Without embedders it does
    /// nothing.
    ///
    /// # Errors
    /// [`RouteError::Backend`] when an embedder fails.
    pub async fn embed_queries(&self, inputs: &[String]) -> Result<(), RouteError> {
        let pairs: Vec<(&str, &str)> = inputs.iter().map(|i| (i.as_str(), i.as_str())).collect();
        self.embed_ahead(&pairs).await
    }

    /// Embeds each `(input, text)`'s text ahead of ranking: with MiniLM, and with USE where
    /// the input gives it a weight ([`HybridRouter::multilingual_weight`]).
    async fn embed_ahead(&self, pairs: &[(&str, &str)]) -> Result<(), RouteError> {
        if let Some(router) = self.embedding() {
            let texts: Vec<String> = pairs.iter().map(|&(_, t)| t.to_owned()).collect();
            router.embed_queries(&texts).await?;
        }
        if let Some(router) = self.multilingual() {
            let texts: Vec<String> = pairs
                .iter()
                .filter(|&&(input, _)| self.multilingual_weight(input) > 0.0)
                .map(|&(_, t)| t.to_owned())
                .collect();
            router.embed_queries(&texts).await?;
        }
        Ok(())
    }

    /// The weight of USE-multilingual's ranking for `input`: CJK input takes
    /// [`HybridConfig::cjk_multilingual_weight`]; other input none when MiniLM ranks it
    /// (unless [`HybridConfig::multilingual_with_embedding`]), else
    /// [`HybridConfig::multilingual_weight`].
    fn multilingual_weight(&self, input: &str) -> f32 {
        let cfg = &self.config;
        if crate::text::mostly_cjk(input) {
            cfg.cjk_multilingual_weight
        } else if self.embedding().is_some() && !cfg.multilingual_with_embedding {
            0.0
        } else {
            cfg.multilingual_weight
        }
    }

    /// Like [`HybridRouter::embed_queries`] for whole requests: embeds what ranking each
    /// request will embed, its latest turn or, for an elliptical turn after earlier
    /// ones, that turn joined with the previous one (found by the same word signals
    /// [`HybridRouter::rank_request`] computes). What `toolbelt route --queries` does
    /// before its first request.
    ///
    /// # Errors
    /// [`RouteError::Backend`] when an embedder fails.
    pub async fn embed_requests(&self, requests: &[RouteRequest]) -> Result<(), RouteError> {
        if self.embedding().is_none() && self.multilingual().is_none() {
            return Ok(());
        }
        let n = self.config.candidates;
        let mut texts = Vec::with_capacity(requests.len());
        for request in requests {
            self.lexical.prepare_async(&request.toolset).await;
            let plan = self.plan(&request.toolset, &request.input, &request.recent, n);
            texts.push(plan.joined.unwrap_or_else(|| request.input.clone()));
        }
        let pairs: Vec<(&str, &str)> = requests
            .iter()
            .zip(&texts)
            .map(|(r, t)| (r.input.as_str(), t.as_str()))
            .collect();
        self.embed_ahead(&pairs).await
    }

    /// Replaces the options.
    #[must_use]
    pub fn with_config(mut self, config: HybridConfig) -> Self {
        self.config = config;
        self
    }

    /// The options.
    pub fn config(&self) -> &HybridConfig {
        &self.config
    }

    /// The lexical router (shares its index).
    pub fn lexical(&self) -> &LexicalRouter {
        &self.lexical
    }

    /// The fused ranking of up to `k` tools, without the adaptive cut or extras.
    pub async fn rank(&self, toolset: &Toolset, input: &str, k: usize) -> Ranking {
        self.rank_with_context(toolset, input, &[], k).await
    }

    /// Like [`HybridRouter::rank`] for a whole request: the latest turn
    /// (`request.input`) ranks as in `rank`, and the earlier turns
    /// (`request.recent`) add a lexical ranking weighted by
    /// [`HybridConfig::context_weight`].
    pub async fn rank_request(&self, request: &RouteRequest, k: usize) -> Ranking {
        self.rank_with_context(&request.toolset, &request.input, &request.recent, k)
            .await
    }

    async fn rank_with_context(
        &self,
        toolset: &Toolset,
        input: &str,
        recent: &[String],
        k: usize,
    ) -> Ranking {
        let cfg = &self.config;
        // A first (or changed) toolset is indexed on the blocking pool.
        self.lexical.prepare_async(toolset).await;
        // Every ranking scores every tool it reaches (z-scores need their mean and spread)
        // and names only its best `head`, the candidates the fusion ranks.
        let head = cfg.candidates.max(k);
        let Plan {
            lexical,
            lexical_ok,
            mut reason,
            groups,
            keyword,
            keyword_sure,
            joined,
            masked,
        } = self.plan(toolset, input, recent, head);
        let embedded = joined.as_deref().unwrap_or(input);
        let (embedding, embedding_ok) = embedding_ranking(
            self.embedding(),
            toolset,
            embedded,
            head,
            "embedding",
            &mut reason,
        )
        .await;
        let cjk = crate::text::mostly_cjk(input);
        let multilingual_weight = self.multilingual_weight(input);
        let (multilingual, multilingual_ok) = if multilingual_weight > 0.0 {
            embedding_ranking(
                self.multilingual(),
                toolset,
                embedded,
                head,
                "multilingual",
                &mut reason,
            )
            .await
        } else {
            (Vec::new(), false)
        };
        let multilingual_ranked = multilingual.iter().any(|v| !v.is_empty());
        let mut lexical_weight = if lexical_ok {
            cfg.lexical_weight
        } else {
            cfg.lexical_weight * 0.5
        };
        if cjk && multilingual_ranked {
            lexical_weight *= cfg.cjk_lexical_factor;
        }
        let context = self.context_ranking(toolset, recent, head);
        let mut learned = match &self.learned {
            Some(index) => index.vote(input, cfg.learned_neighbours, cfg.min_lexical_score),
            None => Vec::new(),
        };
        learned.retain(|t| toolset.contains(&t.name));
        if let Some(t) = learned.first() {
            reason.push_str(&format!("; past requests best {} {:.2}", t.name, t.score));
        }
        if let Some(t) = context.first() {
            reason.push_str(&format!("; earlier turns best {} {:.2}", t.name, t.score));
        }
        let context_weight = cfg.lexical_weight
            * if joined.is_some() {
                1.0
            } else {
                cfg.context_weight
            };
        // Each view of a tool is a ranking of its own; together they weigh what one would.
        let view_weight = |views: &[Scored], weight: f32| weight / views.len().max(1) as f32;
        let mut rankings: Vec<(Ranked<'_>, f32)> = vec![
            (Ranked::Scored(&lexical), lexical_weight),
            (Ranked::Named(&keyword), cfg.keyword_weight),
        ];
        for view in &embedding {
            let weight = view_weight(&embedding, cfg.embedding_weight);
            rankings.push((Ranked::Scored(view), weight));
        }
        for view in &multilingual {
            let weight = view_weight(&multilingual, multilingual_weight);
            rankings.push((Ranked::Scored(view), weight));
        }
        rankings.push((Ranked::Scored(&context), context_weight));
        rankings.push((Ranked::Named(&learned), cfg.learned_weight));
        // Z-score fusion was measured with MiniLM beside USE (ADR 0053). A router with USE
        // alone (the server's and `toolbelt run`'s until they load MiniLM) keeps the
        // best-normalised fusion its weights and adaptive cut were set for.
        let dense =
            self.has_minilm() && embedding.iter().chain(&multilingual).any(|v| !v.is_empty());
        let mut fused = self.fuse(&rankings, toolset.len(), dense);
        self.add_value_fit(
            toolset,
            masked.as_deref().unwrap_or(input),
            &mut fused,
            dense,
        );
        fused.truncate(k);
        Ranking {
            tools: fused,
            groups,
            confident: lexical_ok
                || keyword_sure
                || (cfg.embedding_confidence && (embedding_ok || multilingual_ok))
                || !learned.is_empty(),
            reason,
        }
    }

    /// The request as the word signals (BM25, value fit) read it. With the workspace rule on
    /// (a workspace assistant), a file name names a file, not a tool: `logs/app.log` is read
    /// as "file", as the keyword groups read it, so neither its extension nor its stem ranks
    /// `git` (whose text and `subcommand` values speak of the log).
    /// `None` when the rule is off: the words are the request as written.
    fn masked_words(&self, input: &str) -> Option<String> {
        (!self.config.workspace_tools.is_empty())
            .then(|| crate::keyword::mask_file_names(&input.to_lowercase()))
    }

    /// The word signals of a request (BM25, keyword groups) and the text its vector is
    /// made from: the latest turn, or with an elliptical turn, the previous user turn
    /// joined to it. What [`HybridRouter::rank_request`] starts from and
    /// [`HybridRouter::embed_requests`] embeds ahead.
    fn plan(&self, toolset: &Toolset, input: &str, recent: &[String], head: usize) -> Plan {
        let cfg = &self.config;
        let masked = self.masked_words(input);
        let words = masked.as_deref().unwrap_or(input);
        let lexical = self.bm25(toolset, words, head);
        let mut lexical_ok = lexical
            .first()
            .is_some_and(|t| t.score >= cfg.min_lexical_score);
        let mut reason = match lexical.first() {
            Some(t) => format!("bm25 best {} {:.2}", t.name, t.score),
            None => "bm25 no match".to_owned(),
        };
        // How many words of the request the best tool holds: asked for by the rule on
        // words (`min_lexical_words`) and by the one on elliptical turns, computed once.
        let short_follow_up = cfg.join_unsure_turns
            && !recent.is_empty()
            && crate::text::is_short(input, SHORT_TURN_WORDS);
        let coverage = match lexical.first() {
            Some(best) if (lexical_ok && cfg.min_lexical_words > 1) || short_follow_up => self
                .lexical
                .with_index(toolset, |index| index.coverage(words, &best.name)),
            _ => None,
        };
        if lexical_ok
            && cfg.min_lexical_words > 1
            && coverage.is_some_and(|c| !c.in_name && c.words < cfg.min_lexical_words)
        {
            lexical_ok = false;
            reason.push_str(&format!(
                " (holds fewer than {} words of the request)",
                cfg.min_lexical_words
            ));
        }
        // An elliptical latest turn after earlier ones: its words match no tool surely,
        // or it is short and only one of its words is in the best tool's text.
        let weak_turn = cfg.join_unsure_turns
            && !recent.is_empty()
            && (!lexical_ok || (short_follow_up && coverage.is_some_and(|c| c.words < 2)));
        let mut groups = Vec::new();
        let mut keyword = Vec::new();
        let mut keyword_sure = false;
        // The workspace rule: a group of workspace tools needs a workspace word or two hits.
        let guarded = !cfg.workspace_tools.is_empty() && !crate::keyword::mentions_workspace(input);
        if let Some(router) = &self.keyword {
            for (group, hits) in router.matching_groups(input) {
                let tools = KeywordRouter::group_tools(group, toolset);
                if tools.is_empty() {
                    continue;
                }
                let workspace_group = tools.iter().any(|t| cfg.workspace_tools.contains(t));
                if guarded && workspace_group && hits < 2 {
                    reason.push_str(&format!(
                        "; keyword {} alone does not name the workspace",
                        group.name
                    ));
                } else {
                    keyword_sure = true;
                }
                groups.push(group.name.clone());
                for name in tools {
                    match keyword
                        .iter_mut()
                        .find(|t: &&mut ScoredTool| t.name == name)
                    {
                        Some(t) => t.score += hits as f32,
                        None => keyword.push(ScoredTool {
                            name,
                            score: hits as f32,
                        }),
                    }
                }
            }
            keyword.sort_by(|a, b| b.score.total_cmp(&a.score));
            if !groups.is_empty() {
                reason.push_str(&format!("; keyword {}", groups.join(",")));
            }
        }
        // An elliptical turn is embedded together with the previous user turn, and the
        // earlier turns weigh as much as it does.
        let joined = match recent.last() {
            Some(previous) if weak_turn && keyword.is_empty() => {
                reason.push_str("; elliptical turn: joined with the previous one");
                Some(format!(
                    "{}\n{input}",
                    crate::index::truncate(previous, crate::text::MAX_QUERY_BYTES / 2)
                ))
            }
            _ => None,
        };
        Plan {
            lexical,
            lexical_ok,
            reason,
            groups,
            keyword,
            keyword_sure,
            joined,
            masked,
        }
    }

    /// BM25 over the earlier turns, newest last, capped at the query size limit from the
    /// newest back (the best `head` named).
    fn context_ranking(&self, toolset: &Toolset, recent: &[String], head: usize) -> Scored {
        if self.config.context_weight <= 0.0 || recent.is_empty() {
            return Scored::default();
        }
        let mut text = String::new();
        for turn in recent.iter().rev() {
            if text.len() + turn.len() > crate::text::MAX_QUERY_BYTES {
                break;
            }
            text.push_str(turn);
            text.push('\n');
        }
        if text.trim().is_empty() {
            return Scored::default();
        }
        let hits = self.bm25(toolset, &text, head);
        if hits
            .first()
            .is_some_and(|t| t.score >= self.config.min_lexical_score)
        {
            hits
        } else {
            Scored::default()
        }
    }

    /// Whether the MiniLM embedding ranks here (configured, or its slot filled): z-score
    /// fusion applies only then.
    /// The BM25 ranking of `text`: with MiniLM beside it, a request's English words count
    /// without the lexicon's synonyms ([`HybridConfig::minilm_english_concept_factor`]).
    /// Every tool is scored; the best `head` are named.
    fn bm25(&self, toolset: &Toolset, text: &str, head: usize) -> Scored {
        let factor = self
            .has_minilm()
            .then_some(self.config.minilm_english_concept_factor);
        self.lexical.scores(toolset, text, head, factor)
    }

    fn has_minilm(&self) -> bool {
        self.embedding.is_some()
            || self
                .embedding_slot
                .as_ref()
                .is_some_and(|slot| slot.get().is_some())
    }

    /// One ranking from several; `tools` is the toolset's size (for z-scores), `dense`
    /// whether an embedding ranked the request.
    fn fuse(&self, rankings: &[(Ranked<'_>, f32)], tools: usize, dense: bool) -> Vec<ScoredTool> {
        if self.config.fusion == Fusion::ZScore && dense {
            return fuse_z(rankings, tools, self.config.candidates);
        }
        let mut fused: FastMap<&str, (f32, usize)> = FastMap::default();
        let mut order = 0usize;
        for &(ranking, weight) in rankings {
            // Outside z-scores an embedding view's head is its whole ranking.
            let ranking = ranking.head();
            let Some(best) = ranking.first() else {
                continue;
            };
            let best = best.score.max(f32::EPSILON);
            for (rank, tool) in ranking.iter().enumerate() {
                let add = match self.config.fusion {
                    Fusion::Rrf { k } => weight / (k + rank as f32 + 1.0),
                    Fusion::Scores | Fusion::ZScore => weight * (tool.score / best).max(0.0),
                };
                let entry = fused.entry(tool.name.as_str()).or_insert_with(|| {
                    order += 1;
                    (0.0, order)
                });
                entry.0 += add;
            }
        }
        let mut out: Vec<(&str, f32, usize)> =
            fused.into_iter().map(|(n, (s, o))| (n, s, o)).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
        out.into_iter()
            .map(|(name, score, _)| ScoredTool {
                name: name.to_owned(),
                score,
            })
            .collect()
    }

    /// Adds [`HybridConfig::value_weight`] × the value fit of each of the best
    /// [`HybridConfig::candidates`] tools, and sorts them again.
    fn add_value_fit(&self, toolset: &Toolset, input: &str, fused: &mut [ScoredTool], dense: bool) {
        let cfg = &self.config;
        let Some(best) = fused.first() else {
            return;
        };
        if cfg.value_weight <= 0.0 {
            return;
        }
        // Fused z-scores are in units of spread; other fused scores are scaled by the best.
        let unit = if cfg.fusion == Fusion::ZScore && dense {
            1.0
        } else {
            best.score.abs()
        };
        let fit = ValueFit::of(input);
        let lower = input.to_lowercase();
        let n = fused.len().min(cfg.candidates);
        // The schemas were read when the tools entered the index: nothing is parsed here.
        self.lexical.with_values(toolset, |values| {
            for tool in &mut fused[..n] {
                if let Some(profile) = values.get(tool.name.as_str()) {
                    tool.score += cfg.value_weight * unit * fit.fit(profile, &lower);
                }
            }
        });
        fused[..n].sort_by(|a, b| b.score.total_cmp(&a.score));
    }

    /// The number of ranked tools to send: the adaptive k.
    pub fn adaptive_k(&self, ranked: &[ScoredTool]) -> usize {
        let cfg = &self.config;
        let Some(best) = ranked.first() else {
            return 0;
        };
        let cut = best.score * cfg.relative_cutoff;
        let above = ranked.iter().take_while(|t| t.score >= cut).count();
        above.clamp(cfg.min_k, cfg.max_k).min(ranked.len())
    }

    /// The decision for `request`, with the chosen skills.
    pub async fn decide(&self, request: &RouteRequest) -> RouteDecision {
        let mut d = self.decide_tools(request).await;
        d.skills = self.choose_skills(&request.input);
        if !d.skills.is_empty() {
            let names: Vec<&str> = d.skills.iter().map(|s| s.name.as_str()).collect();
            d.reason.push_str(&format!("; skills {}", names.join(",")));
        }
        d
    }

    async fn decide_tools(&self, request: &RouteRequest) -> RouteDecision {
        let cfg = &self.config;
        let toolset = &request.toolset;
        let empty = request.input.trim().is_empty();
        let ranking = if empty {
            Ranking {
                reason: "empty input".to_owned(),
                ..Ranking::default()
            }
        } else {
            self.rank_request(request, cfg.max_k.max(cfg.candidates).max(cfg.bounded_top))
                .await
        };
        let mut tools = ranking.tools;
        let mut reason = ranking.reason;
        if ranking.confident {
            let k = self.adaptive_k(&tools);
            tools.truncate(k);
            reason = format!("hybrid: sent {k} ranked ({reason})");
        } else {
            match cfg.low_confidence {
                LowConfidence::AllTools if toolset.len() > cfg.all_tools_limit => {
                    let n = cfg.bounded_top;
                    tools.truncate(n);
                    let sent = tools.len();
                    let search = toolset.contains(SearchTools::NAME);
                    if search && !tools.iter().any(|t| t.name == SearchTools::NAME) {
                        tools.push(ScoredTool {
                            name: SearchTools::NAME.to_owned(),
                            score: 0.0,
                        });
                    }
                    self.add_extras(request, &mut tools);
                    let mut d = RouteDecision::tools(
                        "hybrid",
                        tools,
                        format!(
                            "hybrid: not confident ({reason}); {} tools is above the fallback limit of {}: sent top {sent}{}",
                            toolset.len(),
                            cfg.all_tools_limit,
                            if search { " and search_tools" } else { "" }
                        ),
                    );
                    d.groups = ranking.groups;
                    d.bounded_fallback = Some(BoundedFallback {
                        toolset_size: toolset.len(),
                        limit: cfg.all_tools_limit,
                        sent,
                        search_tools: search,
                    });
                    return d;
                }
                LowConfidence::AllTools => {
                    let mut d = RouteDecision::fallback(
                        "hybrid",
                        toolset,
                        format!("hybrid: not confident ({reason}); sending every tool"),
                    );
                    d.groups = ranking.groups;
                    return d;
                }
                LowConfidence::TopK(k) => {
                    tools.truncate(k);
                    reason = format!("hybrid: not confident ({reason}); sent top {k}");
                }
                LowConfidence::NoTools => {
                    tools.clear();
                    reason = format!("hybrid: not confident ({reason}); no ranked tools sent");
                }
            }
        }
        if !empty {
            self.add_workspace_tools(request, &mut tools, &mut reason);
        }
        self.add_extras(request, &mut tools);
        if tools.is_empty() && !ranking.confident && cfg.low_confidence == LowConfidence::NoTools {
            return RouteDecision::direct("hybrid", format!("{reason}: answering without tools"));
        }
        let mut d = RouteDecision::tools("hybrid", tools, reason);
        d.groups = ranking.groups;
        d
    }

    /// The workspace rule ([`HybridConfig::workspace_tools`]), for a request that names the
    /// workspace:
    /// - one that only asks for facts (no verb of change, see
    ///   [`crate::keyword::asks_to_change`]) gets no mutating tool, and every workspace tool:
    ///   they take the places left free, then those of the lowest-ranked other tools (the
    ///   best-ranked tool stays), up to `max_k`;
    /// - one that asks for a change and got none of those tools (nor another tool of their
    ///   groups) gets them, in their order, in place of the lowest-ranked others beyond
    ///   `max_k` (the best stays).
    fn add_workspace_tools(
        &self,
        request: &RouteRequest,
        tools: &mut Vec<ScoredTool>,
        reason: &mut String,
    ) {
        let cfg = &self.config;
        if cfg.workspace_tools.is_empty() || !crate::keyword::mentions_workspace(&request.input) {
            return;
        }
        let toolset = &request.toolset;
        let mut missing: Vec<&String> = cfg
            .workspace_tools
            .iter()
            .filter(|t| toolset.contains(t) && !tools.iter().any(|r| &r.name == *t))
            .collect();
        let mut add: Vec<&String> = Vec::new();
        let reads = !crate::keyword::asks_to_change(&request.input);
        if reads {
            // Small models called `file_edit` for "What theme is set in settings.json?" and
            // `git` for "How many lines in logs/app.log contain ERROR?".
            let mutating = |name: &str| {
                toolset
                    .get(name)
                    .is_some_and(|t| !t.spec().policy.is_read_only())
            };
            let dropped: Vec<String> = tools
                .iter()
                .filter(|t| mutating(&t.name))
                .map(|t| t.name.clone())
                .collect();
            if !dropped.is_empty() {
                tools.retain(|t| !mutating(&t.name));
                reason.push_str(&format!(
                    "; the request only asks for facts: left out {}",
                    dropped.join(", ")
                ));
            }
            while !missing.is_empty() {
                if tools.len() + add.len() >= cfg.max_k.max(1) {
                    let other = tools
                        .iter()
                        .skip(1)
                        .rposition(|t| !cfg.workspace_tools.contains(&t.name));
                    match other {
                        Some(at) => {
                            tools.remove(at + 1);
                        }
                        None => break,
                    }
                }
                add.push(missing.remove(0));
            }
        } else {
            // A ranked tool of the same group (`file_edit` beside `file_read`) already serves.
            let tags = |name: &str| -> Vec<String> {
                toolset
                    .get(name)
                    .map(|t| t.spec().tags.clone())
                    .unwrap_or_default()
            };
            let family: Vec<String> = cfg.workspace_tools.iter().flat_map(|t| tags(t)).collect();
            let served = tools.iter().any(|t| {
                cfg.workspace_tools.contains(&t.name)
                    || tags(&t.name).iter().any(|g| family.contains(g))
            });
            if !served && !missing.is_empty() {
                // The best-ranked tool stays; the workspace tools fill the rest up to `max_k`.
                let keep = cfg
                    .max_k
                    .saturating_sub(missing.len())
                    .max(1)
                    .min(tools.len());
                tools.truncate(keep);
                missing.truncate(cfg.max_k.saturating_sub(keep).max(1));
                add = missing;
            }
        }
        if !add.is_empty() {
            let names: Vec<&str> = add.iter().map(|t| t.as_str()).collect();
            reason.push_str(&format!(
                "; the request names the workspace: sent {}",
                names.join(", ")
            ));
            tools.extend(add.into_iter().map(|name| ScoredTool {
                name: name.clone(),
                score: 0.0,
            }));
        }
        let Some(named) = &cfg.named_file_tool else {
            return;
        };
        if !crate::keyword::names_a_file(&request.input) {
            return;
        }
        if reads {
            if let Some(at) = tools.iter().position(|t| &t.name == named)
                && at > 0
            {
                let tool = tools.remove(at);
                tools.insert(0, tool);
                reason.push_str(&format!("; the request names a file: {named} first"));
            }
        } else if toolset.contains(named) && !tools.iter().any(|t| &t.name == named) {
            // The best-ranked tool stays first; the file's reader comes second.
            tools.truncate(cfg.max_k.max(2) - 1);
            let at = tools.len().min(1);
            tools.insert(
                at,
                ScoredTool {
                    name: named.clone(),
                    score: 0.0,
                },
            );
            reason.push_str(&format!(
                "; the request changes a file it names: sent {named}"
            ));
        }
    }

    /// Adds pinned tools, tools used earlier, and small groups of chosen tools.
    fn add_extras(&self, request: &RouteRequest, tools: &mut Vec<ScoredTool>) {
        let cfg = &self.config;
        let toolset = &request.toolset;
        let push = |tools: &mut Vec<ScoredTool>, name: &str| {
            if toolset.contains(name) && !tools.iter().any(|t| t.name == name) {
                tools.push(ScoredTool {
                    name: name.to_owned(),
                    score: 0.0,
                });
            }
        };
        if let Some(max) = cfg.expand_groups {
            let chosen: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
            for name in chosen {
                let Some(tool) = toolset.get(&name) else {
                    continue;
                };
                for tag in &tool.spec().tags {
                    let group = toolset.with_tag(tag);
                    if group.len() <= max {
                        for member in group.iter() {
                            push(tools, member.name().as_str());
                        }
                    }
                }
            }
        }
        if cfg.keep_used {
            for name in &request.used_tools {
                push(tools, name);
            }
        }
        for name in &cfg.pinned {
            push(tools, name);
        }
    }
}

impl Router for HybridRouter {
    fn name(&self) -> &'static str {
        "hybrid"
    }

    async fn route(&self, request: &RouteRequest) -> Result<RouteDecision, RouteError> {
        Ok(self.decide(request).await)
    }
}

/// See [`HybridRouter::plan`].
struct Plan {
    lexical: Scored,
    lexical_ok: bool,
    reason: String,
    groups: Vec<String>,
    keyword: Vec<ScoredTool>,
    /// Whether a keyword group makes the router sure (see [`HybridConfig::workspace_tools`]).
    keyword_sure: bool,
    joined: Option<String>,
    /// The request as the word signals read it when the workspace rule masks file names
    /// ([`HybridRouter::masked_words`]); `None`: as written.
    masked: Option<String>,
}

/// The rankings of one embedding router (one per view of the tools: every tool's score, the
/// best `head` named, first and in order), whether a best hit is confident, and a note in
/// `reason`; a failure is logged and ranks nothing.
async fn embedding_ranking(
    router: Option<&EmbeddingRouter>,
    toolset: &Toolset,
    input: &str,
    head: usize,
    label: &str,
    reason: &mut String,
) -> (Vec<Scored>, bool) {
    let Some(router) = router else {
        return (Vec::new(), false);
    };
    match router.score_views(toolset, input, head).await {
        Ok(views) => {
            let ok = views.iter().any(|view| {
                view.head()
                    .first()
                    .is_some_and(|t| t.score >= router.min_similarity())
            });
            if let Some(t) = views.first().and_then(|view| view.head().first()) {
                reason.push_str(&format!("; {label} best {} {:.3}", t.name, t.score));
            }
            (views, ok)
        }
        Err(e) => {
            tracing::warn!(error = %e, "hybrid router: {label} embeddings failed; going on without them");
            reason.push_str(&format!("; {label} failed"));
            (Vec::new(), false)
        }
    }
}

/// A ranking as fusion reads it: a short list of named tools (keyword groups, past
/// requests), or the scores of every tool a ranking reaches with only its best named (BM25
/// of the request or of earlier turns, each embedding view).
#[derive(Clone, Copy)]
enum Ranked<'a> {
    Named(&'a [ScoredTool]),
    Scored(&'a Scored),
}

impl<'a> Ranked<'a> {
    /// The named tools, best first (a view's named head).
    fn head(self) -> &'a [ScoredTool] {
        match self {
            Self::Named(ranking) => ranking,
            Self::Scored(scores) => scores.head(),
        }
    }

    /// How many tools the ranking scored.
    fn len(self) -> usize {
        match self {
            Self::Named(ranking) => ranking.len(),
            Self::Scored(scores) => scores.len(),
        }
    }

    /// The sum of every score, and of their squares.
    fn moments(self) -> (f64, f64) {
        match self {
            Self::Named(ranking) => ranking.iter().fold((0.0, 0.0), |(sum, squares), t| {
                let x = f64::from(t.score);
                (sum + x, squares + x * x)
            }),
            Self::Scored(scores) => scores.moments(),
        }
    }

    /// The scores of `names` (0 for a tool the ranking leaves out) into `out`.
    fn scores_of(self, names: &[&str], order: &FastMap<&str, usize>, out: &mut [f32]) {
        match self {
            // Short lists: each entry is looked up among the names (the last of a name
            // listed twice counts).
            Self::Named(ranking) => {
                out.fill(0.0);
                for t in ranking {
                    if let Some(&i) = order.get(t.name.as_str()) {
                        out[i] = t.score;
                    }
                }
            }
            // Every tool of the toolset: each name is looked up in the ranking.
            Self::Scored(scores) => {
                for (x, name) in out.iter_mut().zip(names) {
                    *x = scores.score_of(name);
                }
            }
        }
    }
}

/// Z-score fusion ([`Fusion::ZScore`]) of `rankings` over a toolset of `tools` tools: the
/// best `candidates` of each ranking compete, each scored by every ranking. Each ranking is
/// read once: its mean and spread over every tool, and the scores of the candidates (a tool
/// it leaves out scores 0 in it); nothing is named or hashed per tool beyond the candidates.
fn fuse_z(rankings: &[(Ranked<'_>, f32)], tools: usize, candidates: usize) -> Vec<ScoredTool> {
    // The candidates, in the order they first appear (the tie-break).
    let mut order: FastMap<&str, usize> = FastMap::default();
    let mut names: Vec<&str> = Vec::new();
    for &(ranking, _) in rankings {
        for t in ranking.head().iter().take(candidates) {
            order.entry(t.name.as_str()).or_insert_with(|| {
                names.push(t.name.as_str());
                names.len() - 1
            });
        }
    }
    let mut fused = vec![0f32; names.len()];
    let mut mine = vec![0f32; names.len()];
    for &(ranking, weight) in rankings {
        if ranking.len() == 0 || weight <= 0.0 {
            continue;
        }
        // Tools a ranking leaves out score 0 in it (a lexical ranking lists only tools
        // sharing a word with the request; an embedding ranking lists every tool).
        let (sum, squares) = ranking.moments();
        let n = tools.max(ranking.len()) as f64;
        let mean = sum / n;
        let spread = (squares / n - mean * mean).max(0.0).sqrt();
        if spread < 1e-9 {
            continue;
        }
        let (mean, spread) = (mean as f32, spread as f32);
        ranking.scores_of(&names, &order, &mut mine);
        for (f, &x) in fused.iter_mut().zip(&mine) {
            *f += weight * (x - mean) / spread;
        }
    }
    let mut out: Vec<(usize, f32)> = fused.into_iter().enumerate().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out.into_iter()
        .map(|(i, score)| ScoredTool {
            name: names[i].to_owned(),
            score,
        })
        .collect()
}
