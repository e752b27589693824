//! [`LexicalIndex`]: an incremental BM25 inverted index over tool texts.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use toolbelt_core::ToolSpec;

use crate::decision::ScoredTool;
use crate::text::{AnalyzeBuf, Analyzer, ChineseMode, Lexicon, MAX_QUERY_BYTES};
use crate::tool_text::ToolText;

pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// BM25 parameters, field weights and text analysis of a [`LexicalIndex`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LexicalConfig {
    /// BM25 term-frequency saturation.
    pub k1: f32,
    /// BM25 length normalisation.
    pub b: f32,
    /// Weight of terms from the tool name.
    pub name_weight: f32,
    /// Weight of terms from the description.
    pub description_weight: f32,
    /// Weight of terms from parameter names.
    pub parameter_name_weight: f32,
    /// Weight of terms from parameter descriptions and enum values.
    pub parameter_description_weight: f32,
    /// Weight of terms from tags.
    pub tag_weight: f32,
    /// Weight of terms from learned example requests ([`crate::LearnedUsage`]).
    pub example_weight: f32,
    /// How Chinese text is cut.
    pub chinese: ChineseMode,
    /// Weight of concept terms relative to the word that produced them.
    pub concept_weight: f32,
    /// Factor on [`LexicalConfig::concept_weight`] for the concepts of a request's English
    /// words (their synonyms, such as `remove` for `delete`); tool texts keep every concept at
    /// full weight, so a Chinese request still meets a tool described in English, and a
    /// request's Chinese words keep theirs. Default 1. With MiniLM ranking beside BM25, 0
    /// ranked better on the dev splits of three public sets, but English synonyms are what
    /// lexical-only routing has (docs/ROUTING.md, "Public sets").
    pub english_concept_factor: f32,
    /// Concepts shared by English and Chinese words.
    pub lexicon: Arc<Lexicon>,
}

impl Default for LexicalConfig {
    fn default() -> Self {
        Self {
            k1: 1.2,
            b: 0.5,
            name_weight: 2.5,
            description_weight: 1.0,
            parameter_name_weight: 0.6,
            parameter_description_weight: 0.4,
            tag_weight: 1.5,
            example_weight: 0.25,
            chinese: ChineseMode::default(),
            concept_weight: 1.0,
            english_concept_factor: 1.0,
            lexicon: Arc::new(Lexicon::builtin()),
        }
    }
}

impl LexicalConfig {
    /// Sets the weight of learned example requests (default 0.25).
    #[must_use]
    pub fn with_example_weight(mut self, weight: f32) -> Self {
        self.example_weight = weight.max(0.0);
        self
    }

    /// Sets how Chinese text is cut.
    #[must_use]
    pub fn with_chinese(mut self, mode: ChineseMode) -> Self {
        self.chinese = mode;
        self
    }

    /// Replaces the concept lexicon (use [`Lexicon::empty`] for plain BM25).
    #[must_use]
    pub fn with_lexicon(mut self, lexicon: Lexicon) -> Self {
        self.lexicon = Arc::new(lexicon);
        self
    }

    /// Sets the BM25 parameters.
    #[must_use]
    pub fn with_bm25(mut self, k1: f32, b: f32) -> Self {
        self.k1 = k1;
        self.b = b;
        self
    }

    /// Sets the concept weight.
    #[must_use]
    pub fn with_concept_weight(mut self, weight: f32) -> Self {
        self.concept_weight = weight;
        self
    }

    /// Sets the factor on the concept weight for English words' concepts (0 drops them).
    #[must_use]
    pub fn with_english_concept_factor(mut self, factor: f32) -> Self {
        self.english_concept_factor = factor.max(0.0);
        self
    }
}

/// How well one tool covers a query ([`LexicalIndex::coverage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Coverage {
    /// Distinct words of the query found in the tool's text.
    pub words: usize,
    /// Whether one of them is in the tool's name.
    pub in_name: bool,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    tf: f32,
}

#[derive(Debug, Clone)]
struct Doc {
    name: Arc<str>,
    terms: Vec<u32>,
    fingerprint: u64,
}

/// Per-thread buffers reused by every search.
#[derive(Debug, Default)]
struct Scratch {
    scores: Vec<f32>,
    touched: Vec<u32>,
    query: Vec<(u32, f32)>,
    buf: AnalyzeBuf,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// A BM25 index of tools, updated one tool at a time.
///
/// Terms have integer ids; each term has a postings list of `(doc, weighted tf)`;
/// a search adds scores into a dense per-thread buffer and partially sorts
/// the touched documents, so it allocates only for the hits it returns.
#[derive(Debug, Clone)]
pub struct LexicalIndex {
    config: LexicalConfig,
    /// Cuts tool texts (every concept at full weight) and requests (English words' concepts
    /// scaled by `english_concept_factor`, or the factor a search is given).
    analyzer: Analyzer,
    vocab: FastMap<Box<str>, u32>,
    postings: Vec<Vec<Posting>>,
    docs: Vec<Option<Doc>>,
    doc_len: Vec<f32>,
    /// Shared with the [`Scored`] of searches (copied on the next change while one
    /// is alive).
    by_name: Arc<FastMap<Arc<str>, u32>>,
    free: Vec<u32>,
    total_len: f64,
    buf: AnalyzeBuf,
    pending: FastMap<u32, f32>,
}

impl Default for LexicalIndex {
    fn default() -> Self {
        Self::new(LexicalConfig::default())
    }
}

impl LexicalIndex {
    /// An empty index.
    pub fn new(config: LexicalConfig) -> Self {
        let analyzer = Analyzer::new(
            config.chinese,
            Arc::clone(&config.lexicon),
            config.concept_weight,
        );
        Self {
            config,
            analyzer,
            vocab: FastMap::default(),
            postings: Vec::new(),
            docs: Vec::new(),
            doc_len: Vec::new(),
            by_name: Arc::default(),
            free: Vec::new(),
            total_len: 0.0,
            buf: AnalyzeBuf::default(),
            pending: FastMap::default(),
        }
    }

    /// An index of `specs`.
    pub fn from_specs<'a>(
        config: LexicalConfig,
        specs: impl IntoIterator<Item = &'a ToolSpec>,
    ) -> Self {
        let mut index = Self::new(config);
        for spec in specs {
            index.upsert(spec);
        }
        index
    }

    /// The configuration.
    pub fn config(&self) -> &LexicalConfig {
        &self.config
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether the index has no tools.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Whether a tool named `name` is indexed.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Names of the indexed tools, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(|k| &**k)
    }

    /// Adds `spec`, or re-indexes it when its text changed; returns whether anything changed.
    pub fn upsert(&mut self, spec: &ToolSpec) -> bool {
        self.upsert_text(&ToolText::from_spec(spec))
    }

    /// Like [`LexicalIndex::upsert`] for text already extracted.
    pub fn upsert_text(&mut self, text: &ToolText) -> bool {
        let fingerprint = text.fingerprint();
        if let Some(&id) = self.by_name.get(text.name.as_str()) {
            if self.docs[id as usize]
                .as_ref()
                .is_some_and(|d| d.fingerprint == fingerprint)
            {
                return false;
            }
            self.remove(&text.name);
        }
        self.insert(text, fingerprint);
        true
    }

    fn insert(&mut self, text: &ToolText, fingerprint: u64) {
        let cfg = &self.config;
        let fields: [(&[String], f32); 5] = [
            (&text.examples, cfg.example_weight),
            (&text.parameter_names, cfg.parameter_name_weight),
            (
                &text.parameter_descriptions,
                cfg.parameter_description_weight,
            ),
            (&text.tags, cfg.tag_weight),
            (
                std::slice::from_ref(&text.description),
                cfg.description_weight,
            ),
        ];
        let mut pending = std::mem::take(&mut self.pending);
        pending.clear();
        let mut len = 0.0f32;
        {
            let vocab = &mut self.vocab;
            let postings = &mut self.postings;
            let mut sink = |term: &str, w: f32| {
                let id = match vocab.get(term) {
                    Some(&id) => id,
                    None => {
                        let id = u32::try_from(postings.len()).unwrap_or(u32::MAX);
                        vocab.insert(term.into(), id);
                        postings.push(Vec::new());
                        id
                    }
                };
                *pending.entry(id).or_insert(0.0) += w;
                len += w;
            };
            self.analyzer
                .analyze(&text.name, cfg.name_weight, &mut self.buf, &mut sink);
            for (parts, weight) in fields {
                for part in parts {
                    self.analyzer
                        .analyze(part, weight, &mut self.buf, &mut sink);
                }
            }
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.docs.push(None);
                self.doc_len.push(0.0);
                u32::try_from(self.docs.len() - 1).unwrap_or(u32::MAX)
            }
        };
        let mut terms = Vec::with_capacity(pending.len());
        for (&term, &tf) in &pending {
            self.postings[term as usize].push(Posting { doc: id, tf });
            terms.push(term);
        }
        self.pending = pending;
        let name: Arc<str> = Arc::from(text.name.as_str());
        Arc::make_mut(&mut self.by_name).insert(Arc::clone(&name), id);
        self.docs[id as usize] = Some(Doc {
            name,
            terms,
            fingerprint,
        });
        self.doc_len[id as usize] = len;
        self.total_len += f64::from(len);
    }

    /// Removes the tool named `name`; returns whether it was indexed.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(id) = Arc::make_mut(&mut self.by_name).remove(name) else {
            return false;
        };
        if let Some(doc) = self.docs[id as usize].take() {
            for term in doc.terms {
                self.postings[term as usize].retain(|p| p.doc != id);
            }
        }
        self.total_len -= f64::from(self.doc_len[id as usize]);
        self.doc_len[id as usize] = 0.0;
        self.free.push(id);
        true
    }

    /// The best `k` tools for `query`, best first; tools sharing no term with it are left out.
    pub fn search(&self, query: &str, k: usize) -> Vec<ScoredTool> {
        self.search_scaled(query, k, self.config.english_concept_factor)
    }

    /// Like [`LexicalIndex::search`], with `english` as the factor on the concepts of the
    /// query's English words instead of [`LexicalConfig::english_concept_factor`].
    pub fn search_scaled(&self, query: &str, k: usize, english: f32) -> Vec<ScoredTool> {
        let mut hits = Vec::new();
        self.search_ids_scaled(query, k, english, &mut hits);
        hits.into_iter()
            .filter_map(|(id, score)| {
                self.name_of(id).map(|name| ScoredTool {
                    name: name.to_string(),
                    score,
                })
            })
            .collect()
    }

    /// The tool name of a document id from [`LexicalIndex::search_ids`].
    pub(crate) fn name_of(&self, id: u32) -> Option<&Arc<str>> {
        self.docs.get(id as usize)?.as_ref().map(|d| &d.name)
    }

    /// Like [`LexicalIndex::search`], writing `(doc id, score)` pairs into `out`.
    pub(crate) fn search_ids(&self, query: &str, k: usize, out: &mut Vec<(u32, f32)>) {
        self.search_ids_scaled(query, k, self.config.english_concept_factor, out);
    }

    fn search_ids_scaled(&self, query: &str, k: usize, english: f32, out: &mut Vec<(u32, f32)>) {
        out.clear();
        if k == 0 || self.is_empty() {
            return;
        }
        let query = truncate(query, MAX_QUERY_BYTES);
        SCRATCH.with_borrow_mut(|s| self.search_with(query, k, english, s, out));
    }

    fn search_with(
        &self,
        query: &str,
        k: usize,
        english: f32,
        s: &mut Scratch,
        out: &mut Vec<(u32, f32)>,
    ) {
        self.accumulate(query, english, s);
        let Scratch {
            scores, touched, ..
        } = s;
        out.extend(touched.iter().map(|&d| (d, scores[d as usize])));
        for &d in touched.iter() {
            scores[d as usize] = 0.0;
        }
        touched.clear();
        top_k(out, k);
    }

    /// Every tool the words of `query` reach, with its score, and the best `head` of them
    /// named and in order ([`Scored`], by document id); `english` as in
    /// [`LexicalIndex::search_scaled`].
    pub(crate) fn scores_scaled(&self, query: &str, head: usize, english: f32) -> Scored {
        if head == 0 || self.is_empty() {
            return Scored::default();
        }
        let query = truncate(query, MAX_QUERY_BYTES);
        let hits: Vec<(u32, f32)> = SCRATCH.with_borrow_mut(|s| {
            self.accumulate(query, english, s);
            let Scratch {
                scores, touched, ..
            } = s;
            let hits = touched
                .iter()
                .map(|&d| (d, std::mem::take(&mut scores[d as usize])))
                .collect();
            touched.clear();
            hits
        });
        Scored::new(
            &hits,
            self.docs.len(),
            Arc::clone(&self.by_name),
            head,
            |id| self.name_of(id).map(|name| name.to_string()),
        )
    }

    /// Adds the BM25 score of every document the terms of `query` reach into
    /// `s.scores`, listing each such document once in `s.touched`.
    fn accumulate(&self, query: &str, english: f32, s: &mut Scratch) {
        let Scratch {
            scores,
            touched,
            query: terms,
            buf,
        } = s;
        terms.clear();
        self.analyzer
            .analyze_scaled(query, 1.0, english, buf, &mut |term, w| {
                if let Some(&id) = self.vocab.get(term) {
                    terms.push((id, w));
                }
            });
        if terms.is_empty() {
            return;
        }
        terms.sort_unstable_by_key(|t| t.0);
        terms.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 += next.1;
            }
            same
        });
        if scores.len() < self.docs.len() {
            scores.resize(self.docs.len(), 0.0);
        }
        let n = self.len() as f32;
        let avg_len = (self.total_len / self.len().max(1) as f64) as f32;
        let (k1, b) = (self.config.k1, self.config.b);
        let len_factor = k1 * b / avg_len.max(f32::EPSILON);
        let base = k1 * (1.0 - b);
        for &(term, qw) in terms.iter() {
            let list = &self.postings[term as usize];
            if list.is_empty() {
                continue;
            }
            let df = list.len() as f32;
            let weight = (1.0 + (n - df + 0.5) / (df + 0.5)).ln() * damp(qw);
            for p in list {
                let d = p.doc as usize;
                let norm = base + len_factor * self.doc_len[d];
                let add = weight * p.tf * (k1 + 1.0) / (p.tf + norm);
                if scores[d] == 0.0 {
                    touched.push(p.doc);
                }
                scores[d] += add;
            }
        }
    }

    /// How well the tool `name` covers `query`: how many distinct words of
    /// the query (not their concept expansions) occur in the tool's text,
    /// and whether one of them is in its name. `None` when the tool is not
    /// indexed.
    pub fn coverage(&self, query: &str, name: &str) -> Option<Coverage> {
        let &id = self.by_name.get(name)?;
        let doc = self.docs.get(id as usize)?.as_ref()?;
        let mut buf = AnalyzeBuf::default();
        let mut words: Vec<u32> = Vec::new();
        self.analyzer.analyze(
            truncate(query, MAX_QUERY_BYTES),
            1.0,
            &mut buf,
            &mut |term, _| {
                // `~concept` terms are expansions of a word, not words of the query.
                if !term.starts_with('~')
                    && let Some(&t) = self.vocab.get(term)
                {
                    words.push(t);
                }
            },
        );
        words.sort_unstable();
        words.dedup();
        let mut in_name = Vec::new();
        self.analyzer.analyze(name, 1.0, &mut buf, &mut |term, _| {
            if let Some(&t) = self.vocab.get(term) {
                in_name.push(t);
            }
        });
        let matched: Vec<u32> = words
            .into_iter()
            .filter(|t| doc.terms.contains(t))
            .collect();
        Some(Coverage {
            words: matched.len(),
            in_name: matched.iter().any(|t| in_name.contains(t)),
        })
    }

    /// Approximate heap bytes held by the index.
    pub fn memory_bytes(&self) -> usize {
        let vocab: usize = self
            .vocab
            .keys()
            .map(|k| k.len() + size_of::<(Box<str>, u32)>() + 8)
            .sum();
        let postings: usize = self
            .postings
            .iter()
            .map(|p| p.capacity() * size_of::<Posting>() + size_of::<Vec<Posting>>())
            .sum();
        let docs: usize = self
            .docs
            .iter()
            .flatten()
            .map(|d| d.terms.capacity() * 4 + d.name.len() * 2 + size_of::<Doc>() + 48)
            .sum();
        vocab + postings + docs + self.doc_len.capacity() * 4
    }

    /// Number of distinct terms.
    pub fn vocabulary_len(&self) -> usize {
        self.vocab.len()
    }
}

/// A query term repeated (or produced by several words) counts with diminishing effect.
fn damp(weight: f32) -> f32 {
    if weight <= 1.0 {
        weight
    } else {
        1.0 + weight.ln()
    }
}

/// Best first; ties: the lower id first.
fn by_score(a: &(u32, f32), b: &(u32, f32)) -> Ordering {
    b.1.partial_cmp(&a.1)
        .unwrap_or(Ordering::Equal)
        .then(a.0.cmp(&b.0))
}

/// Keeps the `k` best of `hits`, sorted best first (ties: lower id first).
pub(crate) fn top_k(hits: &mut Vec<(u32, f32)>, k: usize) {
    if k == 0 {
        hits.clear();
        return;
    }
    if hits.len() > k {
        hits.select_nth_unstable_by(k - 1, by_score);
        hits.truncate(k);
    }
    hits.sort_unstable_by(by_score);
}

/// The best `head` of `hits`, best first, in the order [`top_k`] gives (score, then the
/// lower id). A head small beside the hits (the fusion's 50 of 2,000) is kept in order in
/// one pass, where selecting it from the whole list would move every hit; a larger one is
/// selected and sorted as [`top_k`] does.
fn best_of(hits: impl ExactSizeIterator<Item = (u32, f32)>, head: usize) -> Vec<(u32, f32)> {
    if head == 0 {
        return Vec::new();
    }
    if head.saturating_mul(8) >= hits.len() {
        let mut all: Vec<(u32, f32)> = hits.collect();
        top_k(&mut all, head);
        return all;
    }
    let mut best: Vec<(u32, f32)> = Vec::with_capacity(head + 1);
    for hit in hits {
        if best.len() == head {
            // Full: a hit that does not beat the last kept one is not kept.
            if best
                .last()
                .is_none_or(|last| by_score(&hit, last) != Ordering::Less)
            {
                continue;
            }
            best.pop();
        }
        let at = best.partition_point(|kept| by_score(kept, &hit) != Ordering::Greater);
        best.insert(at, hit);
    }
    best
}

/// A ranking's score of every tool it reaches, the best few named in order: what the hybrid
/// router's fusion reads (the mean and spread of every score, the scores of its few
/// candidates) without naming or sorting thousands of tools per request. A BM25 search
/// ([`LexicalIndex::scores_scaled`], by document id) and an embedding view (by tool index)
/// each make one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scored {
    /// The best tools, named, best first.
    head: Vec<ScoredTool>,
    /// Score by index; 0 for a tool the ranking does not reach.
    by_index: Vec<f32>,
    /// The indices by tool name, as they were when the scores were made.
    by_name: Arc<FastMap<Arc<str>, u32>>,
    /// How many tools the ranking reaches.
    scored: usize,
    /// The sum of their scores, and of their squares.
    sum: f64,
    squares: f64,
}

impl Scored {
    /// The scores `hits` (index, score; summed in this order) over `len` indices, named
    /// through `by_name` and, for the best `head`, by `name`.
    pub(crate) fn new(
        hits: &[(u32, f32)],
        len: usize,
        by_name: Arc<FastMap<Arc<str>, u32>>,
        head: usize,
        name: impl Fn(u32) -> Option<String>,
    ) -> Self {
        let mut by_index = vec![0f32; len];
        let (mut sum, mut squares) = (0f64, 0f64);
        for &(i, score) in hits {
            let x = f64::from(score);
            sum += x;
            squares += x * x;
            by_index[i as usize] = score;
        }
        let head = best_of(hits.iter().copied(), head)
            .into_iter()
            .filter_map(|(i, score)| name(i).map(|name| ScoredTool { name, score }))
            .collect();
        Self {
            head,
            by_index,
            by_name,
            scored: hits.len(),
            sum,
            squares,
        }
    }

    /// The best tools, named, best first.
    pub(crate) fn head(&self) -> &[ScoredTool] {
        &self.head
    }

    /// The best tool.
    pub(crate) fn first(&self) -> Option<&ScoredTool> {
        self.head.first()
    }

    /// How many tools were scored.
    pub(crate) fn len(&self) -> usize {
        self.scored
    }

    /// Whether the ranking reached no tool.
    pub(crate) fn is_empty(&self) -> bool {
        self.scored == 0
    }

    /// The sum of every score, and of their squares.
    pub(crate) fn moments(&self) -> (f64, f64) {
        (self.sum, self.squares)
    }

    /// The score of the tool `name`: 0 when the ranking does not reach it.
    pub(crate) fn score_of(&self, name: &str) -> f32 {
        self.by_name
            .get(name)
            .and_then(|&i| self.by_index.get(i as usize))
            .copied()
            .unwrap_or(0.0)
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub(crate) fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests;
