//! [`Scrubber`]: removes the secret values a call used from everything it returns.
//!
//! An upstream may echo a secret in another form than it was sent, so each value is searched
//! as written, JSON-escaped, percent-encoded and base64-encoded (see [`forms`]). Outputs are
//! scrubbed whole, before anything cuts them; where a cut happened before we saw the text (a
//! response body capped while downloading, a command's output with its middle dropped), the
//! start of a secret form left at the edge of a cut is redacted too.

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use serde_json::Value;
use toolbelt_core::ToolError;

/// What replaces a secret.
pub(crate) const REDACTED: &str = "[redacted]";

/// The shortest piece of a secret form redacted at the edge of a cut: shorter pieces reveal
/// almost nothing and would redact ordinary text.
const MIN_EDGE: usize = 3;

/// The secret forms of one call, ready to search.
pub(crate) struct Scrubber {
    forms: Vec<String>,
    matcher: Option<AhoCorasick>,
}

impl Scrubber {
    /// A scrubber for the values a call used (empty values are ignored).
    pub(crate) fn new(secrets: &[String]) -> Self {
        let mut forms: Vec<String> = secrets
            .iter()
            .filter(|s| !s.is_empty())
            .flat_map(|s| forms(s))
            .collect();
        forms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        forms.dedup();
        let matcher = if forms.is_empty() {
            None
        } else {
            // Leftmost-longest: a padded base64 form wins over the core it contains.
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&forms)
                .ok()
        };
        Self { forms, matcher }
    }

    /// `text` with every secret form replaced by [`REDACTED`].
    pub(crate) fn text(&self, text: &str) -> String {
        match &self.matcher {
            Some(m) => m.replace_all(text, &vec![REDACTED; self.forms.len()]),
            None => text.to_owned(),
        }
    }

    /// [`Scrubber::text`] for a text that was cut at its end before we saw it: a trailing
    /// start of a secret form is redacted as well.
    pub(crate) fn text_cut_at_end(&self, text: &str) -> String {
        let mut out = self.text(text);
        if let Some(len) = self.edge(&out, Edge::End) {
            out.truncate(out.len() - len);
            out.push_str(REDACTED);
        }
        out
    }

    /// [`Scrubber::text`] for a text whose middle was replaced by `marker` before we saw it:
    /// the start of a secret form before the marker and the end of one after it are redacted
    /// as well.
    pub(crate) fn text_cut_at(&self, text: &str, marker: &str) -> String {
        let Some(at) = text.find(marker).filter(|_| !marker.is_empty()) else {
            return self.text(text);
        };
        let (head, tail) = (&text[..at], &text[at + marker.len()..]);
        let mut head = self.text(head);
        if let Some(len) = self.edge(&head, Edge::End) {
            head.truncate(head.len() - len);
            head.push_str(REDACTED);
        }
        let mut tail = self.text(tail);
        if let Some(len) = self.edge(&tail, Edge::Start) {
            tail.replace_range(..len, REDACTED);
        }
        format!("{head}{marker}{tail}")
    }

    /// The length of the longest proper piece of a secret form at `edge` of `text`: a prefix
    /// of a form ending `text`, or a suffix of a form starting it.
    fn edge(&self, text: &str, edge: Edge) -> Option<usize> {
        self.forms
            .iter()
            .filter_map(|form| {
                (MIN_EDGE..form.len()).rev().find(|&n| match edge {
                    Edge::End => form.is_char_boundary(n) && text.ends_with(&form[..n]),
                    Edge::Start => {
                        form.is_char_boundary(form.len() - n)
                            && text.starts_with(&form[form.len() - n..])
                    }
                })
            })
            .max()
    }

    /// `value` with every key and string scrubbed, recursively; a number whose digits hold a
    /// secret becomes a scrubbed string.
    pub(crate) fn json(&self, value: Value) -> Value {
        if self.matcher.is_none() {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.text(&s)),
            Value::Number(n) => {
                let digits = n.to_string();
                let scrubbed = self.text(&digits);
                if scrubbed == digits {
                    Value::Number(n)
                } else {
                    Value::String(scrubbed)
                }
            }
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.json(v)).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.text(&k), self.json(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    /// `error` with its message scrubbed.
    pub(crate) fn error(&self, error: ToolError) -> ToolError {
        match error {
            ToolError::Failed { message, retryable } => ToolError::Failed {
                message: self.text(&message),
                retryable,
            },
            ToolError::Denied { reason } => ToolError::Denied {
                reason: self.text(&reason),
            },
            other => other,
        }
    }
}

#[derive(Clone, Copy)]
enum Edge {
    Start,
    End,
}

/// The forms in which `secret` may come back: as written; JSON-escaped (as serde writes it,
/// with `/` escaped, with non-ASCII as `\u` escapes); percent-encoded (every byte but the RFC
/// 3986 unreserved ones, JavaScript's `encodeURIComponent`, HTML forms, Python's `quote`; upper-
/// and lower-case hex; space as `%20` or `+`); base64 (standard and URL-safe, padded and not,
/// and the part that is the same at each of the three byte alignments inside a longer
/// encoded text, e.g. `user:secret` in a Basic authorisation).
pub(crate) fn forms(secret: &str) -> Vec<String> {
    let mut out = vec![secret.to_owned()];
    for slash in [false, true] {
        for ascii in [false, true] {
            out.push(json_escaped(secret, slash, ascii));
        }
    }
    for keep in [UNRESERVED, URI_COMPONENT, FORM, PYTHON_QUOTE] {
        for upper in [true, false] {
            let encoded = percent_encoded(secret, keep, upper);
            out.push(encoded.replace("%20", "+"));
            out.push(encoded);
        }
    }
    let bytes = secret.as_bytes();
    for engine in [&STANDARD, &URL_SAFE] {
        out.push(engine.encode(bytes));
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        out.push(engine.encode(bytes));
        for shift in 0..3usize {
            let mut shifted = vec![0u8; shift];
            shifted.extend_from_slice(bytes);
            let encoded = engine.encode(&shifted);
            // Characters that depend only on the secret's bits.
            let start = (8 * shift).div_ceil(6);
            let end = (8 * (shift + bytes.len())) / 6;
            if end > start && end - start >= 4 {
                out.push(encoded[start..end].to_owned());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn json_escaped(text: &str, slash: bool, ascii: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' if slash => out.push_str("\\/"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c < ' ' || (ascii && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Bytes left as they are by a percent-encoder (besides ASCII letters and digits).
type Keep = &'static [u8];
const UNRESERVED: Keep = b"-._~";
const URI_COMPONENT: Keep = b"-._~!'()*";
const FORM: Keep = b"-._*";
const PYTHON_QUOTE: Keep = b"-._~/";

fn percent_encoded(text: &str, keep: Keep, upper: bool) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || keep.contains(&byte) {
            out.push(char::from(byte));
        } else if upper {
            out.push_str(&format!("%{byte:02X}"));
        } else {
            out.push_str(&format!("%{byte:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
