//! Text analysis for the lexical index: English words, Chinese n-grams and concepts.
//!
//! Every text (a tool's fields or a query) becomes a stream of weighted terms:
//! - English and other alphabetic words, lower-cased, split at `snake_case`,
//!   `camelCase` and dots, with stop words dropped and a light suffix stemmer;
//! - Chinese (and Japanese/Korean) runs as character unigrams + bigrams by
//!   default, or jieba words with the `jieba` feature;
//! - concept terms (`~delete`) from the [`Lexicon`], which maps English words
//!   and Chinese words to one shared concept, so "删除文件" meets "Delete a file".

mod lexicon;
mod stem;

use std::sync::Arc;

pub use lexicon::Lexicon;

/// Longest query text analysed, in bytes; the rest of a longer input is ignored.
///
/// Routing needs the gist of a request, and a cap keeps a 100 KB paste from
/// costing milliseconds.
pub const MAX_QUERY_BYTES: usize = 8 * 1024;

/// How Chinese text is cut into terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ChineseMode {
    /// Character unigrams and bigrams: no dictionary, nothing to load.
    Ngrams,
    /// Character bigrams only (a lone character stays a unigram); the default,
    /// as it beat unigrams + bigrams on the evaluation set (docs/ROUTING.md).
    #[default]
    Bigrams,
    /// jieba-rs search-mode words (feature `jieba`; ~120 ms to load the dictionary).
    #[cfg(feature = "jieba")]
    Jieba,
}

impl ChineseMode {
    /// Parses `ngrams`, `bigrams` or `jieba`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "ngrams" => Some(Self::Ngrams),
            "bigrams" => Some(Self::Bigrams),
            #[cfg(feature = "jieba")]
            "jieba" => Some(Self::Jieba),
            _ => None,
        }
    }
}

/// Reusable buffers for [`Analyzer::analyze`].
#[derive(Debug, Default, Clone)]
pub(crate) struct AnalyzeBuf {
    word: String,
    chars: Vec<usize>,
}

/// Turns text into weighted terms; see the module docs.
#[derive(Debug, Clone)]
pub(crate) struct Analyzer {
    mode: ChineseMode,
    lexicon: Arc<Lexicon>,
    concept_weight: f32,
}

impl Analyzer {
    pub(crate) fn new(mode: ChineseMode, lexicon: Arc<Lexicon>, concept_weight: f32) -> Self {
        Self {
            mode,
            lexicon,
            concept_weight,
        }
    }

    /// Calls `sink(term, weight)` for every term of `text`, each scaled by `weight`.
    pub(crate) fn analyze(
        &self,
        text: &str,
        weight: f32,
        buf: &mut AnalyzeBuf,
        sink: &mut dyn FnMut(&str, f32),
    ) {
        self.analyze_scaled(text, weight, 1.0, buf, sink);
    }

    /// Like [`Analyzer::analyze`], with `english` as the factor on English words' concepts.
    pub(crate) fn analyze_scaled(
        &self,
        text: &str,
        weight: f32,
        english: f32,
        buf: &mut AnalyzeBuf,
        sink: &mut dyn FnMut(&str, f32),
    ) {
        let mut start = None;
        let mut cjk = false;
        for (i, c) in text.char_indices() {
            let class = classify(c);
            match (start, class) {
                (Some(s), Class::Sep) => {
                    self.run(&text[s..i], cjk, weight, english, buf, sink);
                    start = None;
                }
                (Some(s), Class::Cjk) if !cjk => {
                    self.run(&text[s..i], false, weight, english, buf, sink);
                    start = Some(i);
                    cjk = true;
                }
                (Some(s), Class::Word) if cjk => {
                    self.run(&text[s..i], true, weight, english, buf, sink);
                    start = Some(i);
                    cjk = false;
                }
                (None, Class::Word | Class::Cjk) => {
                    start = Some(i);
                    cjk = class == Class::Cjk;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            self.run(&text[s..], cjk, weight, english, buf, sink);
        }
    }

    fn run(
        &self,
        run: &str,
        cjk: bool,
        weight: f32,
        english: f32,
        buf: &mut AnalyzeBuf,
        sink: &mut dyn FnMut(&str, f32),
    ) {
        if cjk {
            self.cjk_run(run, weight, buf, sink);
        } else {
            self.word_run(run, weight, english, buf, sink);
        }
    }

    /// An alphanumeric run such as `getUserHTTPStatus` or `s3`.
    fn word_run(
        &self,
        run: &str,
        weight: f32,
        english: f32,
        buf: &mut AnalyzeBuf,
        sink: &mut dyn FnMut(&str, f32),
    ) {
        let bytes = run.as_bytes();
        let mut parts = 0;
        let mut start = 0;
        for i in 1..=bytes.len() {
            if i == bytes.len() || camel_boundary(bytes, i) {
                self.word(&run[start..i], weight, english, buf, sink);
                start = i;
                parts += 1;
            }
        }
        if parts > 1 {
            // Keep the joined form too, so "github" finds "GitHub".
            self.word(run, weight, english, buf, sink);
        }
    }

    fn word(
        &self,
        word: &str,
        weight: f32,
        english: f32,
        buf: &mut AnalyzeBuf,
        sink: &mut dyn FnMut(&str, f32),
    ) {
        buf.word.clear();
        if word.is_ascii() {
            buf.word.push_str(word);
            buf.word.make_ascii_lowercase();
        } else {
            buf.word.extend(word.chars().flat_map(char::to_lowercase));
        }
        if is_stop_word(&buf.word) {
            return;
        }
        stem::stem(&mut buf.word);
        sink(&buf.word, weight);
        let concept_weight = weight * self.concept_weight * english;
        if concept_weight <= 0.0 {
            return;
        }
        for concept in self.lexicon.english(&buf.word) {
            sink(concept, concept_weight);
        }
    }

    fn cjk_run(
        &self,
        run: &str,
        weight: f32,
        buf: &mut AnalyzeBuf,
        sink: &mut dyn FnMut(&str, f32),
    ) {
        buf.chars.clear();
        buf.chars.extend(run.char_indices().map(|(i, _)| i));
        buf.chars.push(run.len());
        let n = buf.chars.len() - 1;
        let at = |i: usize, j: usize| &run[buf.chars[i]..buf.chars[j]];
        match self.mode {
            ChineseMode::Ngrams | ChineseMode::Bigrams => {
                let unigrams = self.mode == ChineseMode::Ngrams || n == 1;
                for i in 0..n {
                    let one = at(i, i + 1);
                    if unigrams && !is_stop_char(one) {
                        sink(one, weight);
                    }
                    if i + 2 <= n {
                        sink(at(i, i + 2), weight);
                    }
                }
            }
            #[cfg(feature = "jieba")]
            ChineseMode::Jieba => {
                for token in jieba().cut_for_search(run, true) {
                    if !is_stop_char(token.word) {
                        sink(token.word, weight);
                    }
                }
            }
        }
        let concept_weight = weight * self.concept_weight;
        let longest = self.lexicon.longest_chinese();
        for i in 0..n {
            for j in i + 1..=n.min(i + longest) {
                for concept in self.lexicon.chinese(at(i, j)) {
                    sink(concept, concept_weight);
                }
            }
        }
    }
}

#[cfg(feature = "jieba")]
fn jieba() -> &'static jieba_rs::Jieba {
    static JIEBA: std::sync::OnceLock<jieba_rs::Jieba> = std::sync::OnceLock::new();
    JIEBA.get_or_init(jieba_rs::Jieba::new)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Word,
    Cjk,
    Sep,
}

fn classify(c: char) -> Class {
    if c.is_ascii_alphanumeric() {
        Class::Word
    } else if c.is_ascii() {
        Class::Sep
    } else if is_cjk(c) {
        Class::Cjk
    } else if c.is_alphanumeric() {
        Class::Word
    } else {
        Class::Sep
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F) // Extensions B-F
}

/// Whether a new word part starts at byte `i` (`fooBar`, `HTTPServer`).
fn camel_boundary(b: &[u8], i: usize) -> bool {
    let (prev, cur) = (b[i - 1], b[i]);
    if !cur.is_ascii_uppercase() {
        return false;
    }
    if prev.is_ascii_lowercase() || prev.is_ascii_digit() {
        return true;
    }
    prev.is_ascii_uppercase() && b.get(i + 1).is_some_and(u8::is_ascii_lowercase)
}

fn is_stop_word(w: &str) -> bool {
    matches!(
        w,
        "a" | "an"
            | "the"
            | "to"
            | "of"
            | "for"
            | "in"
            | "on"
            | "at"
            | "by"
            | "with"
            | "from"
            | "and"
            | "or"
            | "is"
            | "are"
            | "was"
            | "be"
            | "been"
            | "it"
            | "its"
            | "this"
            | "that"
            | "these"
            | "those"
            | "my"
            | "me"
            | "i"
            | "you"
            | "your"
            | "we"
            | "our"
            | "us"
            | "please"
            | "can"
            | "could"
            | "would"
            | "should"
            | "will"
            | "do"
            | "does"
            | "did"
            | "how"
            | "what"
            | "which"
            | "who"
            | "whom"
            | "into"
            | "as"
            | "if"
            | "so"
            | "than"
            | "then"
            | "there"
            | "here"
            | "just"
            | "also"
            | "some"
            | "any"
            | "all"
            | "want"
            | "need"
            | "let"
            | "now"
            | "right"
            | "many"
            | "much"
            | "thing"
            | "things"
            | "something"
            | "anything"
            | "way"
            | "ok"
            | "hey"
            | "s"
            | "t"
            | "e"
            | "g"
            | "eg"
            | "ie"
    )
}

/// Chinese characters too common to mean anything alone (they still form bigrams).
fn is_stop_char(c: &str) -> bool {
    matches!(
        c,
        "的" | "了"
            | "是"
            | "在"
            | "我"
            | "你"
            | "他"
            | "她"
            | "它"
            | "们"
            | "把"
            | "给"
            | "吗"
            | "呢"
            | "吧"
            | "啊"
            | "和"
            | "与"
            | "及"
            | "一"
            | "个"
            | "这"
            | "那"
            | "些"
            | "么"
            | "请"
            | "帮"
            | "下"
            | "也"
            | "都"
            | "就"
            | "要"
            | "能"
            | "会"
            | "对"
            | "从"
            | "到"
            | "让"
            | "被"
            | "还"
            | "有"
            | "没"
            | "不"
            | "很"
            | "上"
            | "中"
    )
}

#[cfg(test)]
mod tests;

/// Whether `text` is a short turn: at most `max` words, a Han, kana or Hangul letter
/// counting as a word.
pub(crate) fn is_short(text: &str, max: usize) -> bool {
    let cjk = text
        .chars()
        .filter(|c| c.is_alphabetic() && u32::from(*c) >= 0x3040)
        .count();
    let words = text
        .split_whitespace()
        .filter(|w| {
            w.chars()
                .any(|c| c.is_alphanumeric() && u32::from(c) < 0x3040)
        })
        .count();
    cjk + words <= max
}

/// Whether more than half of the letters of `text` are Han, kana or Hangul.
pub(crate) fn mostly_cjk(text: &str) -> bool {
    let (mut cjk, mut letters) = (0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        cjk += usize::from(matches!(u32::from(c),
            0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F));
    }
    cjk * 2 > letters
}
