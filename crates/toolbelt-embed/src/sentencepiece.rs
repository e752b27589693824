//! A SentencePiece unigram tokenizer read from a `.model` file: the
//! precompiled `nmt_nfkc` normalizer (a darts-clone double-array trie over
//! UTF-8 bytes), SentencePiece's whitespace rules, and Viterbi segmentation over the
//! pieces' scores (our own: the `tokenizers` crate's `Unigram` built a trie of a hash map
//! per node, 0.4 s and about 100 MB for this model's 128,000 pieces).

use std::collections::HashMap;
use std::path::Path;

use crate::error::EmbedError;

/// The piece id of unknown text.
const UNK: u32 = 0;
/// The piece id opening a sentence.
const BOS: u32 = 1;
/// The piece id closing a sentence.
const EOS: u32 = 2;
/// What a space becomes (U+2581).
const SPACE: &str = "\u{2581}";

/// A unigram SentencePiece tokenizer.
pub struct SentencePiece {
    normalizer: Normalizer,
    unigram: Viterbi,
    pieces: usize,
}

impl std::fmt::Debug for SentencePiece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentencePiece")
            .field("pieces", &self.pieces)
            .finish_non_exhaustive()
    }
}

impl SentencePiece {
    /// Reads a SentencePiece model file.
    ///
    /// # Errors
    /// [`EmbedError::Io`] when the file cannot be read, [`EmbedError::Tokenizer`] when it is
    /// not a unigram SentencePiece model.
    pub fn from_file(path: &Path) -> Result<Self, EmbedError> {
        let bytes = std::fs::read(path).map_err(|source| EmbedError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::from_bytes(&bytes).map_err(|message| EmbedError::Tokenizer {
            path: path.to_owned(),
            message,
        })
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        let top = fields(bytes)?;
        let mut vocab = Vec::new();
        for piece in top.iter().filter(|f| f.0 == 1) {
            let inner = fields(piece.1)?;
            let text = inner
                .iter()
                .find(|f| f.0 == 1)
                .ok_or_else(|| format!("piece {} has no text", vocab.len()))?;
            let text = std::str::from_utf8(text.1)
                .map_err(|_| format!("piece {} is not UTF-8", vocab.len()))?;
            let score = match inner.iter().find(|f| f.0 == 2) {
                Some((_, b)) if b.len() == 4 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                _ => 0.0,
            };
            vocab.push((text.to_owned(), f64::from(score)));
        }
        if vocab.len() <= EOS as usize {
            return Err(format!("only {} pieces: not a sentence model", vocab.len()));
        }
        // The precompiled character map: in the trainer spec (legacy layout, as this
        // model has it) or in the normalizer spec (field 3, then field 2 either way).
        let mut charsmap: &[u8] = &[];
        for spec in top.iter().filter(|f| f.0 == 3 || f.0 == 4) {
            if let Some(map) = fields(spec.1)?
                .into_iter()
                .find(|f| f.0 == 2 && f.1.len() > 4)
            {
                charsmap = map.1;
                break;
            }
        }
        let normalizer = Normalizer::new(charsmap)?;
        let pieces = vocab.len();
        let unigram = Viterbi::new(vocab);
        Ok(Self {
            normalizer,
            unigram,
            pieces,
        })
    }

    /// Number of pieces in the vocabulary.
    pub fn len(&self) -> usize {
        self.pieces
    }

    /// Whether the vocabulary is empty (never, for a loaded model).
    pub fn is_empty(&self) -> bool {
        self.pieces == 0
    }

    /// The normalized text (spaces as U+2581, with the leading one), as SentencePiece writes it.
    pub fn normalize(&self, text: &str) -> String {
        self.normalizer.normalize(text)
    }

    /// Piece ids of `text` between `<s>` and `</s>`; text that normalizes to nothing is `<unk>`.
    ///
    /// # Errors
    /// A message when the unigram model fails (it does not for a loaded model).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        let normalized = self.normalizer.normalize(text);
        let mut ids = vec![BOS];
        if normalized.is_empty() {
            ids.push(UNK);
        } else {
            for (id, chars) in self.unigram.segment(&normalized) {
                if id == UNK {
                    // SentencePiece keeps one `<unk>` per unknown character.
                    ids.extend(std::iter::repeat_n(UNK, chars));
                } else {
                    ids.push(id);
                }
            }
        }
        ids.push(EOS);
        Ok(ids)
    }
}

/// The score of an unknown character below the lowest piece's (as SentencePiece and
/// `tokenizers` set it).
const UNK_PENALTY: f64 = 10.0;

/// Unigram segmentation: the pieces whose scores sum highest, by Viterbi over the text's
/// characters. A character no piece covers is `<unk>` at [`UNK_PENALTY`] below the lowest
/// score. Ties keep the piece found first (the shorter one, from the earlier start).
struct Viterbi {
    ids: HashMap<Box<str>, u32>,
    scores: Vec<f64>,
    /// The longest piece, in characters.
    max_chars: usize,
    unk_score: f64,
}

impl Viterbi {
    fn new(vocab: Vec<(String, f64)>) -> Self {
        let min = vocab.iter().map(|(_, s)| *s).fold(f64::INFINITY, f64::min);
        let mut ids = HashMap::with_capacity(vocab.len());
        let mut scores = Vec::with_capacity(vocab.len());
        let mut max_chars = 1;
        for (id, (text, score)) in vocab.into_iter().enumerate() {
            max_chars = max_chars.max(text.chars().count());
            scores.push(score);
            // The first of a repeated piece keeps its id.
            ids.entry(text.into_boxed_str())
                .or_insert(u32::try_from(id).unwrap_or(u32::MAX));
        }
        Self {
            ids,
            scores,
            max_chars,
            unk_score: if min.is_finite() { min } else { 0.0 } - UNK_PENALTY,
        }
    }

    /// The best segmentation of `text`: (piece id, characters covered), in order.
    fn segment(&self, text: &str) -> Vec<(u32, usize)> {
        let mut bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        let n = bounds.len();
        bounds.push(text.len());
        // Best (score, start, piece) of a path ending at each character boundary.
        let mut best: Vec<Option<(f64, usize, u32)>> = vec![None; n + 1];
        best[0] = Some((0.0, 0, UNK));
        for start in 0..n {
            let base = best[start].map_or(0.0, |b| b.0);
            let mut single = false;
            for len in 1..=self.max_chars.min(n - start) {
                let Some(&id) = self.ids.get(&text[bounds[start]..bounds[start + len]]) else {
                    continue;
                };
                let score = base + self.scores[id as usize];
                let end = &mut best[start + len];
                if end.is_none_or(|(s, _, _)| score > s) {
                    *end = Some((score, start, id));
                }
                single |= len == 1;
            }
            if !single {
                let score = base + self.unk_score;
                let end = &mut best[start + 1];
                if end.is_none_or(|(s, _, _)| score > s) {
                    *end = Some((score, start, UNK));
                }
            }
        }
        let mut out = Vec::new();
        let mut end = n;
        while end > 0 {
            let Some((_, start, id)) = best[end] else {
                break;
            };
            out.push((id, end - start));
            end = start;
        }
        out.reverse();
        out
    }
}

/// Length-delimited and 32-bit fields of one protobuf message, in order: (field number, bytes).
fn fields(mut data: &[u8]) -> Result<Vec<(u64, &[u8])>, String> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let tag = varint(&mut data)?;
        let (field, wire) = (tag >> 3, tag & 7);
        match wire {
            0 => {
                varint(&mut data)?;
            }
            1 => data = data.get(8..).ok_or("a 64-bit field is cut short")?,
            2 => {
                let len = usize::try_from(varint(&mut data)?).map_err(|_| "a huge field")?;
                let value = data.get(..len).ok_or("a field is cut short")?;
                out.push((field, value));
                data = &data[len..];
            }
            5 => {
                let value = data.get(..4).ok_or("a 32-bit field is cut short")?;
                out.push((field, value));
                data = &data[4..];
            }
            other => return Err(format!("unknown protobuf wire type {other}")),
        }
    }
    Ok(out)
}

fn varint(data: &mut &[u8]) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = data.split_first().ok_or("a varint is cut short")?;
        *data = rest;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("a varint is too long".to_owned())
}

/// SentencePiece's normalizer over a precompiled character map, with
/// `add_dummy_prefix`, `remove_extra_whitespaces` and `escape_whitespaces`.
struct Normalizer {
    /// Double-array units.
    units: Vec<u32>,
    /// Replacement strings, each ending in NUL, addressed by the trie's values.
    replacements: Vec<u8>,
}

impl Normalizer {
    fn new(charsmap: &[u8]) -> Result<Self, String> {
        if charsmap.is_empty() {
            return Ok(Self {
                units: Vec::new(),
                replacements: Vec::new(),
            });
        }
        let size = charsmap
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or("the character map is cut short")?;
        let trie = charsmap
            .get(4..4 + size)
            .ok_or("the character map's trie is cut short")?;
        let units = trie
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Ok(Self {
            units,
            replacements: charsmap[4 + size..].to_vec(),
        })
    }

    fn offset(unit: u32) -> usize {
        ((unit >> 10) << ((unit & 0x200) >> 6)) as usize
    }

    /// The normalized form of the longest known prefix of `data`, and how many bytes it covers;
    /// a character the map does not know stands for itself.
    fn prefix<'a>(&'a self, data: &'a [u8]) -> (&'a [u8], usize) {
        let mut best: Option<(usize, usize)> = None;
        if let Some(&root) = self.units.first() {
            let mut node = Self::offset(root);
            for (i, &c) in data.iter().enumerate() {
                node ^= usize::from(c);
                let Some(&unit) = self.units.get(node) else {
                    break;
                };
                if unit & 0x8000_00ff != u32::from(c) {
                    break;
                }
                node ^= Self::offset(unit);
                if unit & 0x100 != 0 {
                    let Some(&leaf) = self.units.get(node) else {
                        break;
                    };
                    best = Some((i + 1, (leaf & 0x7fff_ffff) as usize));
                }
            }
        }
        if let Some((len, value)) = best
            && value < self.replacements.len()
        {
            let end = self.replacements[value..]
                .iter()
                .position(|&b| b == 0)
                .map_or(self.replacements.len(), |p| value + p);
            return (&self.replacements[value..end], len);
        }
        // One UTF-8 character (the input is a &str, so it is well formed).
        let len = match data[0] {
            b if b < 0x80 => 1,
            b if b >> 5 == 0x6 => 2,
            b if b >> 4 == 0xe => 3,
            _ => 4,
        }
        .min(data.len());
        (&data[..len], len)
    }

    fn normalize(&self, text: &str) -> String {
        let raw = text.as_bytes();
        let mut pos = 0;
        // Leading whitespace goes.
        while pos < raw.len() {
            let (p, used) = self.prefix(&raw[pos..]);
            if p != b" " {
                break;
            }
            pos += used;
        }
        if pos >= raw.len() {
            return String::new();
        }
        let mut out: Vec<u8> = SPACE.as_bytes().to_vec();
        let mut prev_space = true;
        while pos < raw.len() {
            let (mut p, used) = self.prefix(&raw[pos..]);
            pos += used;
            if prev_space {
                while let Some(rest) = p.strip_prefix(b" ") {
                    p = rest;
                }
            }
            if let Some(&last) = p.last() {
                for &b in p {
                    if b == b' ' {
                        out.extend_from_slice(SPACE.as_bytes());
                    } else {
                        out.push(b);
                    }
                }
                prev_space = last == b' ';
            }
        }
        while out.ends_with(SPACE.as_bytes()) {
            out.truncate(out.len() - SPACE.len());
        }
        // Replacements come from the model; a malformed one is replaced, not trusted.
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}
