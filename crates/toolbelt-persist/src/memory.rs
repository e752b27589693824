//! Memory entries and the [`MemoryStore`] trait the `memory_*` tools of
//! `toolbelt-tools` use, with [`MemoryScope`] (the agent and, optionally, the user). An agent reads its own
//! entries and the entries other agents stored with `shared: true`; it changes
//! and forgets only its own. [`MemoryIndex`] keeps entries in memory with a
//! BM25 ranking; `toolbelt-store` keeps them in SQLite or Postgres.
//!
//! Search text goes through [`memory_terms`]: lower-cased words for alphabetic
//! scripts, character bigrams for Chinese, Japanese and Korean, so `邮件` finds
//! `每天早上看邮件` without a segmenter.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use toolbelt_core::{BoxFuture, ToolError};

use crate::vectors::{QuantizedVector, VectorSet};

/// Default largest entry, in bytes of UTF-8 text.
pub const DEFAULT_MAX_ENTRY_BYTES: usize = 4096;
/// Default largest number of entries one agent keeps.
pub const DEFAULT_MAX_ENTRIES_PER_AGENT: u64 = 10_000;
/// Most tags on one entry.
pub const MAX_TAGS: usize = 16;
/// Largest tag, in bytes.
pub const MAX_TAG_BYTES: usize = 64;

/// Whose memory the tools read and write.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MemoryScope {
    /// The agent; entries are owned by it.
    pub agent: String,
    /// The user the agent works for, when memory is kept per user. A scope with a user
    /// sees that user's entries and the agent's entries stored without a user; a scope
    /// without a user sees only entries stored without a user.
    pub user: Option<String>,
}

impl MemoryScope {
    /// The memory of `agent`, for no particular user.
    pub fn agent(agent: impl Into<String>) -> Self {
        Self {
            agent: agent.into(),
            user: None,
        }
    }

    /// The same agent, for `user`.
    #[must_use]
    pub fn for_user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }
}

/// Size limits a [`MemoryStore`] enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryLimits {
    /// Largest entry text, in bytes (default [`DEFAULT_MAX_ENTRY_BYTES`]).
    pub max_entry_bytes: usize,
    /// Most entries per agent, all users together (default [`DEFAULT_MAX_ENTRIES_PER_AGENT`]).
    pub max_entries_per_agent: u64,
}

impl Default for MemoryLimits {
    fn default() -> Self {
        Self {
            max_entry_bytes: DEFAULT_MAX_ENTRY_BYTES,
            max_entries_per_agent: DEFAULT_MAX_ENTRIES_PER_AGENT,
        }
    }
}

impl MemoryLimits {
    /// Sets the largest entry in bytes.
    #[must_use]
    pub fn with_max_entry_bytes(mut self, bytes: usize) -> Self {
        self.max_entry_bytes = bytes;
        self
    }

    /// Sets the most entries per agent.
    #[must_use]
    pub fn with_max_entries_per_agent(mut self, entries: u64) -> Self {
        self.max_entries_per_agent = entries;
        self
    }
}

/// An entry to store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NewMemory {
    /// What to remember.
    pub text: String,
    /// Labels to filter by (each 1–64 bytes, at most 16).
    pub tags: Vec<String>,
    /// 1 (trivia) to 5 (essential); 3 by default. Breaks ties in recall.
    pub importance: u8,
    /// Whether other agents may read it.
    pub shared: bool,
}

impl NewMemory {
    /// `text` with no tags, importance 3, not shared.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            tags: Vec::new(),
            importance: 3,
            shared: false,
        }
    }

    /// Sets the tags.
    #[must_use]
    pub fn with_tags(mut self, tags: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the importance (1–5).
    #[must_use]
    pub fn with_importance(mut self, importance: u8) -> Self {
        self.importance = importance;
        self
    }

    /// Lets other agents read it.
    #[must_use]
    pub fn shared(mut self, shared: bool) -> Self {
        self.shared = shared;
        self
    }

    /// Checks the entry against `limits`; returns it trimmed.
    ///
    /// # Errors
    /// [`MemoryError::Invalid`] naming the field, or [`MemoryError::TooLarge`].
    pub fn validate(mut self, limits: &MemoryLimits) -> Result<Self, MemoryError> {
        self.text = self.text.trim().to_owned();
        if self.text.is_empty() {
            return Err(MemoryError::invalid("/text", "the text is empty"));
        }
        if self.text.len() > limits.max_entry_bytes {
            return Err(MemoryError::TooLarge {
                bytes: self.text.len(),
                limit: limits.max_entry_bytes,
            });
        }
        if !(1..=5).contains(&self.importance) {
            return Err(MemoryError::invalid(
                "/importance",
                format!("{} is out of range; use 1 to 5", self.importance),
            ));
        }
        if self.tags.len() > MAX_TAGS {
            return Err(MemoryError::invalid(
                "/tags",
                format!("{} tags; at most {MAX_TAGS}", self.tags.len()),
            ));
        }
        for (i, tag) in self.tags.iter_mut().enumerate() {
            *tag = tag.trim().to_lowercase();
            if tag.is_empty() || tag.len() > MAX_TAG_BYTES || tag.contains(',') {
                return Err(MemoryError::invalid(
                    format!("/tags/{i}"),
                    format!("a tag is 1 to {MAX_TAG_BYTES} bytes without `,`"),
                ));
            }
        }
        self.tags.sort();
        self.tags.dedup();
        Ok(self)
    }
}

/// One remembered entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MemoryEntry {
    /// Id, unique in the store.
    pub id: i64,
    /// The agent that stored it.
    pub agent: String,
    /// The user it belongs to, if any.
    pub user: Option<String>,
    /// The text.
    pub text: String,
    /// Tags, lower-cased and sorted.
    pub tags: Vec<String>,
    /// 1–5.
    pub importance: u8,
    /// Whether other agents may read it.
    pub shared: bool,
    /// When it was stored, Unix milliseconds.
    pub created_at_ms: i64,
}

impl MemoryEntry {
    /// Assembles an entry (for store implementations).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: i64,
        agent: String,
        user: Option<String>,
        text: String,
        tags: Vec<String>,
        importance: u8,
        shared: bool,
        created_at_ms: i64,
    ) -> Self {
        Self {
            id,
            agent,
            user,
            text,
            tags,
            importance,
            shared,
            created_at_ms,
        }
    }

    /// Whether `scope` may read this entry.
    pub fn readable_by(&self, scope: &MemoryScope) -> bool {
        let user_ok = self.user.is_none() || self.user == scope.user;
        user_ok && (self.agent == scope.agent || self.shared)
    }
}

/// A search over the entries a scope can read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecallQuery {
    /// Words to look for (any language).
    pub query: String,
    /// Only entries carrying every one of these tags.
    pub tags: Vec<String>,
    /// Only entries stored at or after this instant (Unix ms).
    pub since_ms: Option<i64>,
    /// Only entries stored before this instant (Unix ms).
    pub until_ms: Option<i64>,
    /// Most hits (default 5).
    pub limit: usize,
}

impl RecallQuery {
    /// Up to 5 hits for `query`.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            limit: 5,
            ..Self::default()
        }
    }

    /// Keeps only entries with every tag.
    #[must_use]
    pub fn with_tags(mut self, tags: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tags = tags.into_iter().map(|t| t.into().to_lowercase()).collect();
        self
    }

    /// Keeps only entries stored in `[since, until)` (Unix ms).
    #[must_use]
    pub fn between(mut self, since_ms: Option<i64>, until_ms: Option<i64>) -> Self {
        self.since_ms = since_ms;
        self.until_ms = until_ms;
        self
    }

    /// Sets the most hits.
    #[must_use]
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Whether `entry` passes the tag and time filters.
    pub fn admits(&self, entry: &MemoryEntry) -> bool {
        self.tags.iter().all(|t| entry.tags.contains(t))
            && self.since_ms.is_none_or(|s| entry.created_at_ms >= s)
            && self.until_ms.is_none_or(|u| entry.created_at_ms < u)
    }
}

/// A recalled entry and its score (higher is better; comparable only within one answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecallHit {
    /// The entry.
    pub entry: MemoryEntry,
    /// Relevance.
    pub score: f64,
}

impl RecallHit {
    /// Pairs an entry with its score.
    pub fn new(entry: MemoryEntry, score: f64) -> Self {
        Self { entry, score }
    }
}

/// A failure of a [`MemoryStore`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// An argument was wrong.
    #[error("{pointer}: {reason}")]
    Invalid {
        /// JSON pointer of the argument.
        pointer: String,
        /// What was wrong.
        reason: String,
    },
    /// The entry is over the size limit.
    #[error(
        "/text: the entry is {bytes} bytes; the limit is {limit} bytes; store a shorter summary"
    )]
    TooLarge {
        /// Size of the text.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The agent keeps as many entries as it may.
    #[error(
        "agent `{agent}` already keeps {limit} entries, its limit; forget some (memory_forget) first"
    )]
    AgentFull {
        /// The agent.
        agent: String,
        /// The limit.
        limit: u64,
    },
    /// The storage behind the memory failed.
    #[error("the memory could not be read or written")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl MemoryError {
    /// An [`MemoryError::Invalid`].
    pub fn invalid(pointer: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid {
            pointer: pointer.into(),
            reason: reason.into(),
        }
    }
}

impl From<MemoryError> for ToolError {
    fn from(err: MemoryError) -> Self {
        match err {
            MemoryError::Invalid { pointer, reason } => {
                ToolError::invalid_argument(pointer, reason)
            }
            MemoryError::TooLarge { .. } => ToolError::invalid_argument("/text", err.to_string()),
            MemoryError::Backend(ref source) => ToolError::retryable(format!("{err}: {source}")),
            MemoryError::AgentFull { .. } => ToolError::failed(err.to_string()),
        }
    }
}

/// Where memory entries are kept.
pub trait MemoryStore: Send + Sync + 'static {
    /// Stores an entry owned by `scope.agent` (and `scope.user`), after
    /// [`NewMemory::validate`] and the per-agent limit.
    fn store<'a>(
        &'a self,
        scope: &'a MemoryScope,
        entry: NewMemory,
    ) -> BoxFuture<'a, Result<MemoryEntry, MemoryError>>;

    /// The best entries `scope` can read for `query`, best first.
    fn recall<'a>(
        &'a self,
        scope: &'a MemoryScope,
        query: &'a RecallQuery,
    ) -> BoxFuture<'a, Result<Vec<RecallHit>, MemoryError>>;

    /// Entries `scope` can read with every tag in `tags`, newest first.
    fn list<'a>(
        &'a self,
        scope: &'a MemoryScope,
        tags: &'a [String],
        limit: usize,
        offset: usize,
    ) -> BoxFuture<'a, Result<Vec<MemoryEntry>, MemoryError>>;

    /// The entries among `ids` that `scope` owns (agent and user match); others are left out.
    fn owned<'a>(
        &'a self,
        scope: &'a MemoryScope,
        ids: &'a [i64],
    ) -> BoxFuture<'a, Result<Vec<MemoryEntry>, MemoryError>>;

    /// Deletes the entries among `ids` that `scope` owns; returns how many went.
    fn forget<'a>(
        &'a self,
        scope: &'a MemoryScope,
        ids: &'a [i64],
    ) -> BoxFuture<'a, Result<u64, MemoryError>>;
}

/// Whether `scope` owns `entry` (may forget it).
pub fn owns(scope: &MemoryScope, entry: &MemoryEntry) -> bool {
    entry.agent == scope.agent && entry.user == scope.user
}

// ---------------------------------------------------------------------------
// Terms

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK Extension A
        | 0x4E00..=0x9FFF // CJK Unified Ideographs
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0xF900..=0xFAFF // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F) // Extensions B–F, compatibility supplement
}

const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "for", "from", "i", "in", "is", "it",
    "me", "my", "of", "on", "or", "that", "the", "this", "to", "was", "what", "with", "you",
];

fn push_word(word: &mut String, out: &mut Vec<String>) {
    if word.is_empty() {
        return;
    }
    let mut w = std::mem::take(word);
    if STOPWORDS.contains(&w.as_str()) {
        return;
    }
    // Plural `s` only: `emails` → `email`, keeps `class`, `status`-like words intact enough.
    if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        w.pop();
    }
    out.push(w);
}

fn push_cjk(run: &mut Vec<char>, out: &mut Vec<String>) {
    match run.len() {
        0 => {}
        1 => out.push(run[0].to_string()),
        _ => {
            for pair in run.windows(2) {
                out.push(pair.iter().collect());
            }
        }
    }
    run.clear();
}

/// The search terms of `text`: lower-cased words of letters and digits (English stop
/// words dropped, a plural `s` removed) and, for runs of Chinese, Japanese or Korean
/// characters, their overlapping character bigrams (a lone character stays a unigram).
/// Every term is letters and digits only.
pub fn memory_terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut run: Vec<char> = Vec::new();
    for c in text.chars() {
        if is_cjk(c) {
            push_word(&mut word, &mut out);
            run.push(c);
        } else if c.is_alphanumeric() {
            push_cjk(&mut run, &mut out);
            word.extend(c.to_lowercase());
        } else {
            push_word(&mut word, &mut out);
            push_cjk(&mut run, &mut out);
        }
    }
    push_word(&mut word, &mut out);
    push_cjk(&mut run, &mut out);
    out
}

// ---------------------------------------------------------------------------
// In-memory BM25 store

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Entries in dense slots with postings lists of `(slot, term frequency)`, so a query walks
/// each of its terms' postings once and adds into an array (no hashing per posting).
#[derive(Debug, Default)]
struct Index {
    /// Entries and their length in terms, by slot; `None` once forgotten.
    slots: Vec<Option<(MemoryEntry, u32)>>,
    /// Length in terms by slot (0 once forgotten), apart from the entries so that scoring
    /// reads a small dense array.
    lens: Vec<u32>,
    by_id: HashMap<i64, u32>,
    postings: HashMap<String, Vec<(u32, u32)>>,
    total_len: u64,
    live: usize,
    next_id: i64,
    /// Entry vectors by slot, for hybrid recall.
    vectors: VectorSet,
}

impl Index {
    fn get(&self, id: i64) -> Option<&MemoryEntry> {
        let slot = *self.by_id.get(&id)?;
        self.slots[slot as usize].as_ref().map(|(e, _)| e)
    }

    fn entries(&self) -> impl Iterator<Item = &MemoryEntry> {
        self.slots.iter().flatten().map(|(e, _)| e)
    }

    fn insert(&mut self, entry: MemoryEntry, vector: Option<&QuantizedVector>) {
        self.remove(entry.id);
        let Ok(slot) = u32::try_from(self.slots.len()) else {
            return;
        };
        let terms = memory_terms(&entry.text);
        let len = u32::try_from(terms.len()).unwrap_or(u32::MAX);
        let mut tf: HashMap<String, u32> = HashMap::new();
        for term in terms {
            *tf.entry(term).or_default() += 1;
        }
        for (term, n) in tf {
            self.postings.entry(term).or_default().push((slot, n));
        }
        self.total_len += u64::from(len);
        self.live += 1;
        self.by_id.insert(entry.id, slot);
        self.slots.push(Some((entry, len)));
        self.lens.push(len);
        self.vectors.push(vector);
    }

    fn remove(&mut self, id: i64) -> bool {
        let Some(slot) = self.by_id.remove(&id) else {
            return false;
        };
        let Some((entry, len)) = self.slots[slot as usize].take() else {
            return false;
        };
        self.total_len -= u64::from(len);
        self.live -= 1;
        self.lens[slot as usize] = 0;
        self.vectors.clear(slot);
        for term in memory_terms(&entry.text) {
            if let Some(p) = self.postings.get_mut(&term) {
                p.retain(|(s, _)| *s != slot);
                if p.is_empty() {
                    self.postings.remove(&term);
                }
            }
        }
        true
    }
}

/// Scores `docs` for `terms` with Okapi BM25 (k1 1.2, b 0.75).
///
/// `df(term)` is the number of documents containing the term, `n` the number of
/// documents and `avg_len` their mean length in terms. Exposed for comparisons.
pub fn bm25(tf: u32, df: usize, n: usize, len: u32, avg_len: f64) -> f64 {
    let (n, df) = (n as f64, df as f64);
    let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
    let tf = f64::from(tf);
    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * f64::from(len) / avg_len.max(1.0)))
}

/// Entries in memory with a BM25 ranking over [`memory_terms`]; lost when the process ends.
#[derive(Debug, Default)]
pub struct MemoryIndex {
    limits: MemoryLimits,
    index: RwLock<Index>,
}

impl MemoryIndex {
    /// An empty index with the default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty index with `limits`.
    pub fn with_limits(limits: MemoryLimits) -> Self {
        Self {
            limits,
            index: RwLock::default(),
        }
    }

    /// Adds an entry as is (ids and times included), e.g. one read from elsewhere.
    pub fn insert_entry(&self, entry: MemoryEntry) {
        self.insert_entry_with_vector(entry, None);
    }

    /// Adds an entry with its vector (from the [`Embedder`](toolbelt_core::Embedder) whose
    /// query vectors [`MemoryIndex::search_hybrid`] will be given).
    pub fn insert_entry_with_vector(&self, entry: MemoryEntry, vector: Option<&QuantizedVector>) {
        let mut index = self.index.write().unwrap_or_else(PoisonError::into_inner);
        index.next_id = index.next_id.max(entry.id);
        index.insert(entry, vector);
    }

    /// The entries `scope` can read that match `query`, best first (BM25 over
    /// [`memory_terms`], then importance, then newest).
    pub fn search(&self, scope: &MemoryScope, query: &RecallQuery) -> Vec<RecallHit> {
        self.search_hybrid(scope, query, None)
    }

    /// Like [`MemoryIndex::search`], and with `vector` (the query's, from the model that
    /// made the entries' vectors) ranked by meaning too: the best entries by BM25 and the
    /// nearest by cosine are pooled, and each is scored
    /// `0.2 · bm25 / best bm25 + 0.8 · max(0, (cosine − 0.25) / 0.75)`, so an entry in another
    /// language or other words can be found, and a word match alone no longer decides
    /// (ADR 0041). Scores are then in `[0, 1]`; entries scoring 0 are left out.
    pub fn search_hybrid(
        &self,
        scope: &MemoryScope,
        query: &RecallQuery,
        vector: Option<&[f32]>,
    ) -> Vec<RecallHit> {
        let words = self.word_matches(scope, query);
        self.search_hybrid_with(scope, query, words, vector)
    }

    /// The first half of [`MemoryIndex::search_hybrid`]: the entries matching `query`'s
    /// words. A caller making the query's vector meanwhile (on another thread) passes them
    /// to [`MemoryIndex::search_hybrid_with`] when the vector is ready.
    pub fn word_matches(&self, scope: &MemoryScope, query: &RecallQuery) -> WordMatches {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        let entry = |slot: u32| index.slots[slot as usize].as_ref().map(|(e, _)| e);
        let admitted =
            |slot: u32| entry(slot).is_some_and(|e| e.readable_by(scope) && query.admits(e));
        WordMatches(lexical(&index, query, hybrid_want(query), &admitted))
    }

    /// The second half of [`MemoryIndex::search_hybrid`]: `words` (from
    /// [`MemoryIndex::word_matches`] for the same scope and query) fused with the entries
    /// nearest to `vector`. Entries forgotten in between are left out.
    pub fn search_hybrid_with(
        &self,
        scope: &MemoryScope,
        query: &RecallQuery,
        words: WordMatches,
        vector: Option<&[f32]>,
    ) -> Vec<RecallHit> {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        let entry = |slot: u32| {
            index
                .slots
                .get(slot as usize)
                .and_then(Option::as_ref)
                .map(|(e, _)| e)
        };
        let admitted =
            |slot: u32| entry(slot).is_some_and(|e| e.readable_by(scope) && query.admits(e));
        let want = hybrid_want(query);
        let WordMatches(mut found) = words;
        found.retain(|&(slot, _)| entry(slot).is_some());
        let q = vector
            .and_then(QuantizedVector::quantize)
            .filter(|_| index.vectors.len() > 0);
        if let Some(q) = q {
            let best_lexical = found.iter().fold(0.0_f64, |m, c| m.max(c.1));
            let mut pooled: HashMap<u32, (f64, f32)> = found
                .iter()
                .map(|&(slot, bm25)| (slot, (bm25, index.vectors.cosine(slot, &q).unwrap_or(0.0))))
                .collect();
            for (slot, cosine) in index.vectors.nearest(&q, want, want * 4, admitted) {
                pooled.entry(slot).or_insert((0.0, cosine));
            }
            found = pooled
                .into_iter()
                .map(|(slot, (bm25, cosine))| {
                    let lexical = if best_lexical > 0.0 {
                        bm25 / best_lexical
                    } else {
                        0.0
                    };
                    let meaning =
                        f64::from(((cosine - COSINE_FLOOR) / (1.0 - COSINE_FLOOR)).max(0.0));
                    (
                        slot,
                        LEXICAL_WEIGHT * lexical + (1.0 - LEXICAL_WEIGHT) * meaning,
                    )
                })
                .filter(|c| c.1 > 0.0)
                .collect();
        }
        // Best first as `sort_hits` orders them; only the best `limit` are ordered and cloned.
        let order = |a: &(u32, f64), b: &(u32, f64)| match (entry(a.0), entry(b.0)) {
            (Some(x), Some(y)) => {
                b.1.total_cmp(&a.1)
                    .then(y.importance.cmp(&x.importance))
                    .then(y.created_at_ms.cmp(&x.created_at_ms))
                    .then(y.id.cmp(&x.id))
            }
            _ => b.1.total_cmp(&a.1),
        };
        if query.limit < found.len() {
            if query.limit > 0 {
                found.select_nth_unstable_by(query.limit - 1, order);
            }
            found.truncate(query.limit);
        }
        found.sort_by(order);
        found
            .into_iter()
            .filter_map(|(slot, score)| Some(RecallHit::new(entry(slot)?.clone(), score)))
            .collect()
    }
}

/// Entries matching a query's words, found by [`MemoryIndex::word_matches`].
#[derive(Debug, Clone, Default)]
pub struct WordMatches(Vec<(u32, f64)>);

/// Candidates taken from each ranking of a hybrid recall: most never make the answer, so
/// the entries (scope, filters) of the best-scored few are looked at first, and all of them
/// only when too few of those are admitted.
fn hybrid_want(query: &RecallQuery) -> usize {
    query.limit.saturating_mul(8).max(64)
}

/// Weight of the lexical score in a hybrid recall (the rest is meaning).
const LEXICAL_WEIGHT: f64 = 0.2;
/// Cosine at or below which an entry counts as unrelated in meaning.
const COSINE_FLOOR: f32 = 0.25;

/// The admitted entries with a BM25 score for `query`: at least the best `want` of them
/// (all of them when fewer of the best `want` are admitted than `query.limit`).
fn lexical(
    index: &Index,
    query: &RecallQuery,
    want: usize,
    admitted: &impl Fn(u32) -> bool,
) -> Vec<(u32, f64)> {
    let n = index.live;
    let avg = if n == 0 {
        1.0
    } else {
        index.total_len as f64 / n as f64
    };
    let mut terms = memory_terms(&query.query);
    terms.sort();
    terms.dedup();
    let mut scores = vec![0.0_f64; index.slots.len()];
    let mut touched: Vec<u32> = Vec::new();
    for term in &terms {
        let Some(postings) = index.postings.get(term) else {
            continue;
        };
        for &(slot, tf) in postings {
            let len = index.lens[slot as usize];
            if len == 0 {
                continue;
            }
            let score = &mut scores[slot as usize];
            if *score == 0.0 {
                touched.push(slot);
            }
            *score += bm25(tf, postings.len(), n, len, avg);
        }
    }
    let mut found: Vec<(u32, f64)> = touched
        .into_iter()
        .map(|s| (s, scores[s as usize]))
        .collect();
    if want < found.len() {
        let by_score = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1);
        found.select_nth_unstable_by(want - 1, by_score);
        let floor = found[want - 1].1;
        // Keep every tie of the last score so the order breaks ties as `sort_hits` does.
        let mut best: Vec<(u32, f64)> = found.iter().copied().filter(|c| c.1 >= floor).collect();
        best.retain(|c| admitted(c.0));
        if best.len() >= query.limit {
            return best;
        }
    }
    found.retain(|c| admitted(c.0));
    found
}

/// Orders hits best first: score, then importance, then newest, then id.
pub fn sort_hits(hits: &mut [RecallHit]) {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.entry.importance.cmp(&a.entry.importance))
            .then(b.entry.created_at_ms.cmp(&a.entry.created_at_ms))
            .then(b.entry.id.cmp(&a.entry.id))
    });
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

impl MemoryStore for MemoryIndex {
    fn store<'a>(
        &'a self,
        scope: &'a MemoryScope,
        entry: NewMemory,
    ) -> BoxFuture<'a, Result<MemoryEntry, MemoryError>> {
        let result = (|| {
            let entry = entry.validate(&self.limits)?;
            let mut index = self.index.write().unwrap_or_else(PoisonError::into_inner);
            let count = index.entries().filter(|e| e.agent == scope.agent).count() as u64;
            if count >= self.limits.max_entries_per_agent {
                return Err(MemoryError::AgentFull {
                    agent: scope.agent.clone(),
                    limit: self.limits.max_entries_per_agent,
                });
            }
            index.next_id += 1;
            let stored = MemoryEntry::new(
                index.next_id,
                scope.agent.clone(),
                scope.user.clone(),
                entry.text,
                entry.tags,
                entry.importance,
                entry.shared,
                now_ms(),
            );
            index.insert(stored.clone(), None);
            Ok(stored)
        })();
        Box::pin(std::future::ready(result))
    }

    fn recall<'a>(
        &'a self,
        scope: &'a MemoryScope,
        query: &'a RecallQuery,
    ) -> BoxFuture<'a, Result<Vec<RecallHit>, MemoryError>> {
        Box::pin(std::future::ready(Ok(self.search(scope, query))))
    }

    fn list<'a>(
        &'a self,
        scope: &'a MemoryScope,
        tags: &'a [String],
        limit: usize,
        offset: usize,
    ) -> BoxFuture<'a, Result<Vec<MemoryEntry>, MemoryError>> {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        let mut entries: Vec<MemoryEntry> = index
            .entries()
            .filter(|e| e.readable_by(scope) && tags.iter().all(|t| e.tags.contains(t)))
            .cloned()
            .collect();
        drop(index);
        entries.sort_by(|a, b| b.created_at_ms.cmp(&a.created_at_ms).then(b.id.cmp(&a.id)));
        let page = entries.into_iter().skip(offset).take(limit).collect();
        Box::pin(std::future::ready(Ok(page)))
    }

    fn owned<'a>(
        &'a self,
        scope: &'a MemoryScope,
        ids: &'a [i64],
    ) -> BoxFuture<'a, Result<Vec<MemoryEntry>, MemoryError>> {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        let entries = ids
            .iter()
            .filter_map(|id| index.get(*id))
            .filter(|e| owns(scope, e))
            .cloned()
            .collect();
        Box::pin(std::future::ready(Ok(entries)))
    }

    fn forget<'a>(
        &'a self,
        scope: &'a MemoryScope,
        ids: &'a [i64],
    ) -> BoxFuture<'a, Result<u64, MemoryError>> {
        let mut index = self.index.write().unwrap_or_else(PoisonError::into_inner);
        let mine: Vec<i64> = ids
            .iter()
            .copied()
            .filter(|id| index.get(*id).is_some_and(|e| owns(scope, e)))
            .collect();
        let gone = mine.into_iter().filter(|id| index.remove(*id)).count() as u64;
        Box::pin(std::future::ready(Ok(gone)))
    }
}

/// Formats Unix milliseconds as RFC 3339 UTC (`2026-11-22T09:00:00Z`).
pub fn format_ms(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms).map_or_else(
        || ms.to_string(),
        |t| t.to_rfc3339_opts(SecondsFormat::Secs, true),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn terms_mix_words_and_bigrams() {
        assert_eq!(
            memory_terms("I like SHORT answers, 我喜欢短回答!"),
            vec![
                "like", "short", "answer", "我喜", "喜欢", "欢短", "短回", "回答"
            ]
        );
        assert_eq!(memory_terms("猫"), vec!["猫"]);
        assert!(memory_terms("  , !").is_empty());
    }

    #[tokio::test]
    async fn index_scopes_and_ranks() {
        let index = MemoryIndex::with_limits(MemoryLimits::default().with_max_entries_per_agent(2));
        let a = MemoryScope::agent("a");
        let b = MemoryScope::agent("b");
        index
            .store(&a, NewMemory::new("用户喜欢短回答"))
            .await
            .unwrap();
        index
            .store(&a, NewMemory::new("check email every morning").shared(true))
            .await
            .unwrap();
        let full = index.store(&a, NewMemory::new("third")).await.unwrap_err();
        assert!(matches!(full, MemoryError::AgentFull { limit: 2, .. }));
        let hits = index.recall(&a, &RecallQuery::new("短回答")).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].entry.text, "用户喜欢短回答");
        // b sees only the shared entry.
        assert!(
            index
                .recall(&b, &RecallQuery::new("短回答"))
                .await
                .unwrap()
                .is_empty()
        );
        let hits = index.recall(&b, &RecallQuery::new("emails")).await.unwrap();
        assert_eq!(hits.len(), 1);
        // b cannot forget a's entry.
        assert_eq!(index.forget(&b, &[hits[0].entry.id]).await.unwrap(), 0);
    }

    #[test]
    fn limits_are_named() {
        let limits = MemoryLimits::default().with_max_entry_bytes(8);
        let err = NewMemory::new("123456789").validate(&limits).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/text: the entry is 9 bytes; the limit is 8 bytes; store a shorter summary"
        );
        let err = NewMemory::new("x")
            .with_importance(9)
            .validate(&limits)
            .unwrap_err();
        assert!(err.to_string().contains("/importance"), "{err}");
        let err = NewMemory::new("x")
            .with_tags([""])
            .validate(&limits)
            .unwrap_err();
        assert!(err.to_string().starts_with("/tags/0"), "{err}");
    }
}
