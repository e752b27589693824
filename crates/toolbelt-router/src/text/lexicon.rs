//! [`Lexicon`]: concepts shared by English words and Chinese words.

use std::collections::HashMap;

use crate::error::RouteError;
use crate::text::stem::stem;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The built-in concept list (`lexicon/concepts.txt`).
const BUILTIN: &str = include_str!("../../lexicon/concepts.txt");

/// Concepts that several surface words share, across English and Chinese.
///
/// Each line of the source text is `concept: word word 词 词`, `#` starts a
/// comment. A text containing any surface word also yields the concept term
/// `~concept`, so a Chinese query meets an English description (and
/// "remove" meets "delete") without a model. English words are stemmed like
/// every other word; Chinese words match anywhere inside a run of characters.
#[derive(Debug, Clone, Default)]
pub struct Lexicon {
    terms: Vec<Box<str>>,
    english: FastMap<Box<str>, Vec<u32>>,
    chinese: FastMap<Box<str>, Vec<u32>>,
    longest_chinese: usize,
}

impl Lexicon {
    /// The concept list shipped with toolbelt (computing, office and business vocabulary).
    pub fn builtin() -> Self {
        // The built-in text is checked by a unit test; an error cannot happen at run time.
        Self::parse(BUILTIN).unwrap_or_default()
    }

    /// A lexicon with no concepts (plain BM25).
    pub fn empty() -> Self {
        Self::default()
    }

    /// Parses the `concept: word word` format.
    ///
    /// # Errors
    /// [`RouteError::Config`] naming the line with no `:` or no words.
    pub fn parse(text: &str) -> Result<Self, RouteError> {
        let mut lexicon = Self::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let Some((concept, words)) = line.split_once(':') else {
                return Err(RouteError::Config(format!(
                    "lexicon line {}: expected `concept: word word ...`, found {line:?}",
                    i + 1
                )));
            };
            lexicon.add(concept.trim(), words.split([' ', ',', '\t']), i + 1)?;
        }
        Ok(lexicon)
    }

    /// Adds (or extends) `concept` with `words`; `line` is for error messages.
    fn add<'a>(
        &mut self,
        concept: &str,
        words: impl Iterator<Item = &'a str>,
        line: usize,
    ) -> Result<(), RouteError> {
        let term: Box<str> = format!("~{}", concept.to_lowercase()).into();
        let id = match self.terms.iter().position(|t| *t == term) {
            Some(id) => id,
            None => {
                self.terms.push(term);
                self.terms.len() - 1
            }
        };
        let id = u32::try_from(id).unwrap_or(u32::MAX);
        let mut any = false;
        for word in words.map(str::trim).filter(|w| !w.is_empty()) {
            any = true;
            let (map, key) = if word.is_ascii() {
                let mut w = word.to_ascii_lowercase();
                stem(&mut w);
                (&mut self.english, w)
            } else {
                self.longest_chinese = self.longest_chinese.max(word.chars().count());
                (&mut self.chinese, word.to_owned())
            };
            let ids = map.entry(key.into_boxed_str()).or_default();
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        if any {
            Ok(())
        } else {
            Err(RouteError::Config(format!(
                "lexicon line {line}: concept {concept:?} has no words"
            )))
        }
    }

    /// Number of concepts.
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// Whether there are no concepts.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Concept terms of a stemmed English word.
    pub(crate) fn english(&self, stemmed: &str) -> impl Iterator<Item = &str> {
        self.lookup(&self.english, stemmed)
    }

    /// Concept terms of a Chinese word.
    pub(crate) fn chinese(&self, word: &str) -> impl Iterator<Item = &str> {
        self.lookup(&self.chinese, word)
    }

    fn lookup<'a>(
        &'a self,
        map: &'a FastMap<Box<str>, Vec<u32>>,
        key: &str,
    ) -> impl Iterator<Item = &'a str> {
        map.get(key)
            .into_iter()
            .flatten()
            .filter_map(|&id| self.terms.get(id as usize).map(|t| &**t))
    }

    /// Length in characters of the longest Chinese word.
    pub(crate) fn longest_chinese(&self) -> usize {
        self.longest_chinese
    }
}
