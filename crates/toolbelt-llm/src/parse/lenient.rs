//! A forgiving JSON reader for what models write: single quotes, unquoted
//! keys, trailing or missing commas, Python literals, comments and (when
//! allowed) missing closing brackets at the end of the text.

use serde_json::{Map, Number, Value};

/// Deepest nesting accepted; deeper input is rejected rather than risking the stack.
const MAX_DEPTH: usize = 64;

/// What damage the reader repairs beyond the always-on fixes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Leniency {
    /// Close objects and arrays still open at the end of the text.
    pub(crate) close_brackets: bool,
}

/// Reads one value at the start of `text` (after whitespace) and returns it
/// with the number of bytes consumed.
pub(crate) fn parse_prefix(text: &str, leniency: Leniency) -> Option<(Value, usize)> {
    let mut reader = Reader {
        src: text.as_bytes(),
        text,
        pos: 0,
        leniency,
    };
    reader.skip_blank();
    let value = reader.value(0)?;
    Some((value, reader.pos))
}

/// Reads `text` as one value, with nothing but whitespace after it.
pub(crate) fn parse_all(text: &str, leniency: Leniency) -> Option<Value> {
    let (value, used) = parse_prefix(text, leniency)?;
    let mut rest = Reader {
        src: text.as_bytes(),
        text,
        pos: used,
        leniency,
    };
    rest.skip_blank();
    (rest.pos == text.len()).then_some(value)
}

struct Reader<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
    leniency: Leniency,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    /// Skips whitespace and `//` or `/* */` comments.
    fn skip_blank(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') if self.src.get(self.pos + 1) == Some(&b'/') => {
                    while let Some(c) = self.peek() {
                        if c == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                Some(b'/') if self.src.get(self.pos + 1) == Some(&b'*') => {
                    match self.text[self.pos + 2..].find("*/") {
                        Some(end) => self.pos += 2 + end + 2,
                        None => self.pos = self.src.len(),
                    }
                }
                _ => return,
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' | b'\'' => self.string().map(Value::String),
            b'-' | b'+' | b'.' | b'0'..=b'9' => self.number(),
            _ => self.literal(),
        }
    }

    fn object(&mut self, depth: usize) -> Option<Value> {
        self.pos += 1;
        let mut map = Map::new();
        loop {
            self.skip_blank();
            match self.peek() {
                None if self.leniency.close_brackets => return Some(Value::Object(map)),
                None => return None,
                Some(b'}') => {
                    self.pos += 1;
                    return Some(Value::Object(map));
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => {}
            }
            let key = self.key()?;
            self.skip_blank();
            if self.peek()? != b':' {
                return None;
            }
            self.pos += 1;
            self.skip_blank();
            let value = self.value(depth + 1)?;
            map.insert(key, value);
        }
    }

    fn array(&mut self, depth: usize) -> Option<Value> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_blank();
            match self.peek() {
                None if self.leniency.close_brackets => return Some(Value::Array(items)),
                None => return None,
                Some(b']') => {
                    self.pos += 1;
                    return Some(Value::Array(items));
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => items.push(self.value(depth + 1)?),
            }
        }
    }

    fn key(&mut self) -> Option<String> {
        match self.peek()? {
            b'"' | b'\'' => self.string(),
            _ => {
                let start = self.pos;
                while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'-'))
                {
                    self.pos += 1;
                }
                (self.pos > start).then(|| self.text[start..self.pos].to_owned())
            }
        }
    }

    /// A string in double or single quotes; raw control characters are kept.
    /// An unterminated string is never accepted: it means the text was cut.
    fn string(&mut self) -> Option<String> {
        let quote = self.peek()?;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.pos..];
            let stop = rest.find([quote as char, '\\'])?;
            out.push_str(&rest[..stop]);
            self.pos += stop;
            if self.peek()? == quote {
                self.pos += 1;
                return Some(out);
            }
            self.pos += 1;
            let escaped = self.peek()?;
            self.pos += 1;
            match escaped {
                b'n' => out.push('\n'),
                b't' => out.push('\t'),
                b'r' => out.push('\r'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'u' => out.push(self.unicode_escape()),
                _ => {
                    // `\"`, `\'`, `\\`, `\/` and unknown escapes stand for the character itself.
                    let c = self.text[self.pos - 1..].chars().next()?;
                    self.pos += c.len_utf8() - 1;
                    out.push(c);
                }
            }
        }
    }

    /// The code point of `\uXXXX` (and a following low surrogate); U+FFFD when broken.
    fn unicode_escape(&mut self) -> char {
        let Some(high) = self.hex4() else {
            return char::REPLACEMENT_CHARACTER;
        };
        if (0xD800..0xDC00).contains(&high) && self.text[self.pos..].starts_with("\\u") {
            let save = self.pos;
            self.pos += 2;
            if let Some(low) = self.hex4().filter(|l| (0xDC00..0xE000).contains(l)) {
                let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                return char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
            }
            self.pos = save;
        }
        char::from_u32(high).unwrap_or(char::REPLACEMENT_CHARACTER)
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.pos..self.pos + 4)?;
        let code = u32::from_str_radix(digits, 16).ok()?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.pos += 4;
        Some(code)
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.pos;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.pos += 1;
        }
        let text = self.text[start..self.pos].trim_start_matches('+');
        if let Ok(n) = text.parse::<i64>() {
            return Some(Value::from(n));
        }
        if let Ok(n) = text.parse::<u64>() {
            return Some(Value::from(n));
        }
        let float = text.parse::<f64>().ok()?;
        Number::from_f64(float).map(Value::Number)
    }

    fn literal(&mut self) -> Option<Value> {
        let start = self.pos;
        while matches!(self.peek(), Some(c) if c.is_ascii_alphabetic()) {
            self.pos += 1;
        }
        match &self.text[start..self.pos] {
            "true" | "True" => Some(Value::Bool(true)),
            "false" | "False" => Some(Value::Bool(false)),
            "null" | "None" | "undefined" => Some(Value::Null),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const CLOSE: Leniency = Leniency {
        close_brackets: true,
    };
    const STRICT_END: Leniency = Leniency {
        close_brackets: false,
    };

    #[test]
    fn repairs_common_damage() {
        let cases = [
            (r#"{"a": 1,}"#, json!({"a": 1})),
            ("{'a': 'it\\'s'}", json!({"a": "it's"})),
            ("{a: 1, b_c: [1, 2,]}", json!({"a": 1, "b_c": [1, 2]})),
            (r#"{"a": True, "b": None}"#, json!({"a": true, "b": null})),
            ("{\"a\": 1 // note\n}", json!({"a": 1})),
            (r#"{"a": 1 "b": 2}"#, json!({"a": 1, "b": 2})),
            (
                r#"{"s": "line1
line2"}"#,
                json!({"s": "line1\nline2"}),
            ),
            (r#"{"e": "\ud83d\ude00 \u00e9"}"#, json!({"e": "😀 é"})),
            (r#"{"a": {"b": [1, 2"#, json!({"a": {"b": [1, 2]}})),
        ];
        for (text, want) in cases {
            assert_eq!(parse_all(text, CLOSE), Some(want), "{text}");
        }
    }

    #[test]
    fn refuses_what_cannot_be_repaired() {
        for text in [r#"{"a": "cut"#, "{a 1}", "{\"a\": nope}", "", "[1, 2"] {
            let leniency = if text == "[1, 2" { STRICT_END } else { CLOSE };
            assert_eq!(parse_all(text, leniency), None, "{text}");
        }
        let deep = "[".repeat(MAX_DEPTH + 2);
        assert_eq!(parse_all(&deep, CLOSE), None);
    }

    #[test]
    fn prefix_reports_consumed_bytes() {
        let text = r#"{"a": 1} and then prose"#;
        assert_eq!(parse_prefix(text, CLOSE), Some((json!({"a": 1}), 8)));
    }
}
