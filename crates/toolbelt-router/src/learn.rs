//! Learning from use: requests that a tool served successfully become part of
//! that tool's routing document, so later requests worded the same way find it.
//!
//! The run log is behind the [`RunLog`] trait: `toolbelt-host`'s `StoreRunLog`
//! reads the store's run log through it, and `toolbelt route --learn-from FILE`
//! hands records to [`LearnedUsage::learn`] directly. This module only folds
//! records. Only calls that succeeded count: failed, rejected and denied calls
//! never teach the router anything.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::RouteError;

/// How a tool call ended, as the run log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallOutcome {
    /// The tool ran and returned a result.
    Succeeded,
    /// The tool ran and failed (an error result, a timeout).
    Failed,
    /// The call was rejected (invalid arguments, unknown tool) or denied by a person or a policy.
    Denied,
}

/// One tool call from a run log: which tool, for which user request, when, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UseRecord {
    /// The tool's name.
    pub tool: String,
    /// The user's request of the turn that made the call.
    pub request: String,
    /// When, in seconds since the Unix epoch.
    pub at: u64,
    /// How the call ended.
    pub outcome: CallOutcome,
}

impl UseRecord {
    /// A record.
    pub fn new(
        tool: impl Into<String>,
        request: impl Into<String>,
        at: u64,
        outcome: CallOutcome,
    ) -> Self {
        Self {
            tool: tool.into(),
            request: request.into(),
            at,
            outcome,
        }
    }
}

/// Where tool calls are recorded; read by [`LearnedUsage::from_run_log`].
///
/// Asynchronous because the log that matters lives in a database (`toolbelt-host`
/// implements it over the store); the router crate awaits nothing else and assumes
/// no runtime (ADR 0063).
pub trait RunLog: Send + Sync {
    /// The tool calls recorded at or after `since` (seconds since the epoch), oldest first.
    ///
    /// # Errors
    /// [`RouteError::Backend`] when the log cannot be read.
    fn tool_uses(
        &self,
        since: u64,
    ) -> impl Future<Output = Result<Vec<UseRecord>, RouteError>> + Send;
}

/// Bounds of [`LearnedUsage`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct LearnConfig {
    /// Most example requests kept per tool (the most recent win). Default 16.
    pub max_per_tool: usize,
    /// Age at which an example counts half, in seconds. Default 30 days.
    pub half_life: u64,
    /// Examples whose weight `0.5^(age / half_life)` fell below this are dropped. Default 0.125
    /// (three half-lives).
    pub min_weight: f32,
    /// Longest example kept, in bytes (longer requests are cut). Default 512.
    pub max_bytes: usize,
}

impl Default for LearnConfig {
    fn default() -> Self {
        Self {
            max_per_tool: 16,
            half_life: 30 * 24 * 3600,
            min_weight: 0.125,
            max_bytes: 512,
        }
    }
}

impl LearnConfig {
    /// Keeps at most `n` examples per tool.
    #[must_use]
    pub fn with_max_per_tool(mut self, n: usize) -> Self {
        self.max_per_tool = n;
        self
    }

    /// Sets the half-life of an example, in seconds.
    #[must_use]
    pub fn with_half_life(mut self, seconds: u64) -> Self {
        self.half_life = seconds.max(1);
        self
    }

    /// The oldest time a record can still teach as of `now` (both in seconds since the
    /// epoch): where its weight falls to `min_weight` (three half-lives back by default).
    /// A log needs to give nothing older.
    pub fn since(&self, now: u64) -> u64 {
        if self.min_weight <= 0.0 {
            return 0;
        }
        let lives = f64::from(self.min_weight).recip().log2().max(0.0);
        let span = (self.half_life.max(1) as f64 * lives).ceil();
        now.saturating_sub(span as u64)
    }
}

/// Example requests per tool, folded from successful calls; given to a
/// [`crate::LexicalRouter`] with `with_learned_usage` (opt-in), which indexes
/// them as one more field of each tool's document
/// ([`crate::LexicalConfig::example_weight`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LearnedUsage {
    examples: HashMap<String, Vec<String>>,
}

impl LearnedUsage {
    /// Folds `records` as of `now` (seconds since the epoch): only
    /// [`CallOutcome::Succeeded`] calls, each tool's most recent distinct
    /// requests first, at most `max_per_tool`, none older than the decay allows.
    pub fn learn(
        records: impl IntoIterator<Item = UseRecord>,
        now: u64,
        cfg: &LearnConfig,
    ) -> Self {
        let mut by_tool: HashMap<String, Vec<(u64, String)>> = HashMap::new();
        for r in records {
            if r.outcome != CallOutcome::Succeeded || r.request.trim().is_empty() {
                continue;
            }
            let age = now.saturating_sub(r.at) as f64;
            let weight = 0.5f64.powf(age / cfg.half_life.max(1) as f64);
            if weight < f64::from(cfg.min_weight) {
                continue;
            }
            let text = crate::index::truncate(r.request.trim(), cfg.max_bytes).to_owned();
            by_tool.entry(r.tool).or_default().push((r.at, text));
        }
        let examples = by_tool
            .into_iter()
            .map(|(tool, mut uses)| {
                uses.sort_by_key(|u| std::cmp::Reverse(u.0));
                let mut kept: Vec<String> = Vec::new();
                for (_, text) in uses {
                    if kept.len() >= cfg.max_per_tool {
                        break;
                    }
                    if !kept.contains(&text) {
                        kept.push(text);
                    }
                }
                (tool, kept)
            })
            .filter(|(_, kept)| !kept.is_empty())
            .collect();
        Self { examples }
    }

    /// Reads the run log from `now - 3 half-lives` and folds it; see [`LearnedUsage::learn`].
    ///
    /// # Errors
    /// The run log's error.
    pub async fn from_run_log(
        log: &impl RunLog,
        now: u64,
        cfg: &LearnConfig,
    ) -> Result<Self, RouteError> {
        Ok(Self::learn(log.tool_uses(cfg.since(now)).await?, now, cfg))
    }

    /// The example requests of `tool`, most recent first.
    pub fn examples(&self, tool: &str) -> &[String] {
        self.examples.get(tool).map_or(&[], Vec::as_slice)
    }

    /// How many tools have examples.
    pub fn tools(&self) -> usize {
        self.examples.len()
    }

    /// How many example requests there are, over every tool.
    pub fn len(&self) -> usize {
        self.examples.values().map(Vec::len).sum()
    }

    /// Whether nothing was learned.
    pub fn is_empty(&self) -> bool {
        self.examples.is_empty()
    }
}

/// A shared snapshot (what the lexical router holds).
pub(crate) type SharedUsage = Arc<LearnedUsage>;

/// Past requests as documents, each pointing at the tools it was served by
/// (what [`crate::HybridRouter::with_learned_usage`] searches).
#[derive(Debug)]
pub(crate) struct RequestIndex {
    index: crate::index::LexicalIndex,
    tools: Vec<Vec<String>>,
}

/// A document name no query term can match: the id's digits as private-use characters.
fn doc_name(i: usize) -> String {
    i.to_string()
        .chars()
        .map(|d| char::from_u32(0xE000 + d.to_digit(10).unwrap_or(0)).unwrap_or('\u{E000}'))
        .collect()
}

impl RequestIndex {
    pub(crate) fn new(usage: &LearnedUsage, config: crate::index::LexicalConfig) -> Self {
        let mut by_text: HashMap<&str, Vec<String>> = HashMap::new();
        let mut order: Vec<&str> = Vec::new();
        let mut tools: Vec<&String> = usage.examples.keys().collect();
        tools.sort();
        for tool in tools {
            for text in &usage.examples[tool] {
                let entry = by_text.entry(text.as_str()).or_insert_with(|| {
                    order.push(text.as_str());
                    Vec::new()
                });
                entry.push(tool.clone());
            }
        }
        let mut index = crate::index::LexicalIndex::new(config);
        let mut docs = Vec::with_capacity(order.len());
        for (i, text) in order.iter().enumerate() {
            index.upsert_text(&crate::tool_text::ToolText {
                name: doc_name(i),
                description: (*text).to_owned(),
                ..crate::tool_text::ToolText::default()
            });
            docs.push(by_text.remove(text).unwrap_or_default());
        }
        Self { index, tools: docs }
    }

    /// Tools voted for by the past requests most like `query`: each of the best
    /// `neighbours` requests adds its BM25 score to each of its tools.
    pub(crate) fn vote(
        &self,
        query: &str,
        neighbours: usize,
        min_score: f32,
    ) -> Vec<crate::ScoredTool> {
        let mut hits = Vec::new();
        self.index.search_ids(query, neighbours, &mut hits);
        let mut votes: Vec<crate::ScoredTool> = Vec::new();
        for (id, score) in hits {
            if score < min_score {
                continue;
            }
            let Some(name) = self.index.name_of(id) else {
                continue;
            };
            let i: usize = name
                .chars()
                .filter_map(|c| char::from_digit(u32::from(c).wrapping_sub(0xE000), 10))
                .collect::<String>()
                .parse()
                .unwrap_or(usize::MAX);
            for tool in self.tools.get(i).into_iter().flatten() {
                match votes.iter_mut().find(|v| &v.name == tool) {
                    Some(v) => v.score += score,
                    None => votes.push(crate::ScoredTool {
                        name: tool.clone(),
                        score,
                    }),
                }
            }
        }
        votes.sort_by(|a, b| b.score.total_cmp(&a.score));
        votes
    }
}
