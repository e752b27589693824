//! Just enough XML for `<tool_call>` tags: attributes, elements and
//! parameter children. Models' XML is loose, so this reads it loosely.

use serde_json::{Map, Value};

/// Deepest element nesting read as objects.
const MAX_DEPTH: usize = 32;

/// The `key="value"` pairs of a start tag's inside (after its name).
pub(super) fn attributes(tag: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = tag.trim();
    while !rest.is_empty() {
        let key_end = rest
            .find(|c: char| c == '=' || c.is_whitespace() || c == '/')
            .unwrap_or(rest.len());
        let key = &rest[..key_end];
        rest = rest[key_end..].trim_start();
        let Some(after_eq) = rest.strip_prefix('=') else {
            if key.is_empty() {
                // A stray `/`: skip it.
                rest = skip_char(rest).trim_start();
            } else {
                out.push((key.to_owned(), String::new()));
            }
            continue;
        };
        let after_eq = after_eq.trim_start();
        let (value, remaining) = match after_eq.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let body = &after_eq[1..];
                match body.find(q) {
                    Some(end) => (&body[..end], &body[end + 1..]),
                    None => (body, ""),
                }
            }
            _ => {
                let end = after_eq
                    .find(|c: char| c.is_whitespace() || c == '/')
                    .unwrap_or(after_eq.len());
                (&after_eq[..end], &after_eq[end..])
            }
        };
        if !key.is_empty() {
            out.push((key.to_owned(), unescape(value)));
        }
        rest = remaining.trim_start();
    }
    out
}

fn skip_char(text: &str) -> &str {
    let mut chars = text.chars();
    chars.next();
    chars.as_str()
}

/// The inside of the first `<name ...>...</name>` in `text` (to the end when
/// the closing tag is missing; empty when self-closing).
pub(super) fn element<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}");
    let mut from = 0;
    while let Some(i) = text[from..].find(&open) {
        let start = from + i;
        let after = start + open.len();
        match text[after..].chars().next() {
            Some(c) if c == '>' || c == '/' || c.is_whitespace() => {
                let tag_end = after + text[after..].find('>')?;
                if text[..tag_end].ends_with('/') {
                    return Some("");
                }
                let inner_start = tag_end + 1;
                return Some(match find_close(text, inner_start, name) {
                    Some((inner_end, _)) => &text[inner_start..inner_end],
                    None => &text[inner_start..],
                });
            }
            _ => from = after,
        }
    }
    None
}

/// Finds the `</name>` matching an element opened just before `from`,
/// counting nested elements of the same name. Returns (inner end, close end).
fn find_close(text: &str, from: usize, name: &str) -> Option<(usize, usize)> {
    let open = format!("<{name}");
    let close = format!("</{name}>");
    let mut depth = 0usize;
    let mut pos = from;
    // One forward pass over the `<`s: linear in the text.
    while let Some(i) = text[pos..].find('<') {
        let at = pos + i;
        let rest = &text[at..];
        if rest.starts_with(&close) {
            if depth == 0 {
                return Some((at, at + close.len()));
            }
            depth -= 1;
            pos = at + close.len();
        } else if rest.starts_with(&open)
            && matches!(rest[open.len()..].chars().next(), Some(c) if c == '>' || c.is_whitespace())
        {
            depth += 1;
            pos = at + open.len();
        } else {
            pos = at + 1;
        }
    }
    None
}

/// The arguments inside `<parameters>`: JSON when it is JSON, else one entry
/// per child element. `None` when it is neither.
pub(super) fn parameters(inner: &str) -> Option<Value> {
    let text = inner.trim();
    if text.starts_with('{') {
        return super::repair_json(text);
    }
    if text.is_empty() {
        return Some(Value::Object(Map::new()));
    }
    children(text, 0).map(Value::Object)
}

/// Child elements as an object; repeated names become arrays. `None` when the
/// text holds anything but elements.
fn children(text: &str, depth: usize) -> Option<Map<String, Value>> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut map = Map::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after
                .find("-->")
                .map_or("", |i| &after[i + 3..])
                .trim_start();
            continue;
        }
        let after_lt = rest.strip_prefix('<')?;
        let name_end = after_lt.find(|c: char| c == '>' || c == '/' || c.is_whitespace())?;
        let name = &after_lt[..name_end];
        if name.is_empty() {
            return None;
        }
        let tag_end = after_lt.find('>')?;
        let tag_inside = &after_lt[name_end..tag_end];
        let attrs = attributes(tag_inside.trim_end_matches('/'));
        let key = match name {
            "parameter" | "param" | "arg" | "argument" => attrs
                .iter()
                .find(|(k, _)| k == "name" || k == "key")
                .map_or_else(|| name.to_owned(), |(_, v)| v.clone()),
            _ => name.to_owned(),
        };
        let body_start = 1 + tag_end + 1;
        let (value, consumed) = if tag_inside.ends_with('/') {
            (Value::Null, body_start)
        } else {
            match find_close(rest, body_start, name) {
                Some((inner_end, close_end)) => {
                    (value_of(&rest[body_start..inner_end], depth), close_end)
                }
                None => (value_of(&rest[body_start..], depth), rest.len()),
            }
        };
        insert(&mut map, key, value);
        rest = rest[consumed..].trim_start();
    }
    Some(map)
}

fn insert(map: &mut Map<String, Value>, key: String, value: Value) {
    match map.get_mut(&key) {
        Some(Value::Array(items)) => items.push(value),
        Some(existing) => {
            let first = existing.take();
            *existing = Value::Array(vec![first, value]);
        }
        None => {
            map.insert(key, value);
        }
    }
}

/// An element's value: nested elements as an object, CDATA as text, other
/// text as JSON when it parses (numbers, booleans, arrays) or else as a string.
fn value_of(inner: &str, depth: usize) -> Value {
    let text = inner.trim();
    if let Some(cdata) = text.strip_prefix("<![CDATA[") {
        return Value::String(cdata.strip_suffix("]]>").unwrap_or(cdata).to_owned());
    }
    if text.starts_with('<')
        && let Some(map) = children(text, depth + 1).filter(|m| !m.is_empty())
    {
        return Value::Object(map);
    }
    let text = unescape(text);
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// Replaces the five XML entities and numeric character references.
fn unescape(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let decoded = rest.find(';').filter(|&end| end <= 10).and_then(|end| {
            let entity = &rest[1..end];
            let c = match entity {
                "lt" => Some('<'),
                "gt" => Some('>'),
                "amp" => Some('&'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => entity
                    .strip_prefix("#x")
                    .or_else(|| entity.strip_prefix("#X"))
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            }?;
            Some((c, end + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_attributes_loosely() {
        let attrs = attributes(r#" id="call_1" name='calc' flag x=y "#);
        let want = [("id", "call_1"), ("name", "calc"), ("flag", ""), ("x", "y")];
        assert_eq!(
            attrs,
            want.map(|(k, v)| (k.to_owned(), v.to_owned())).to_vec()
        );
    }

    #[test]
    fn reads_children_as_typed_values() {
        let params = parameters(
            "<a>10</a><op>add &amp; more</op><list>1</list><list>2</list>\
             <nested><x>true</x></nested><parameter name=\"q\">hi</parameter><none/>",
        );
        let want = json!({"a": 10, "op": "add & more", "list": [1, 2],
            "nested": {"x": true}, "q": "hi", "none": null});
        assert_eq!(params, Some(want));
    }

    #[test]
    fn nested_same_name_elements_match_their_own_close() {
        assert_eq!(
            element("<p><p>in</p>out</p>tail", "p"),
            Some("<p>in</p>out")
        );
        assert_eq!(
            unescape("a &lt;b&gt; &#65;&#x42; &bogus; &"),
            "a <b> AB &bogus; &"
        );
    }
}
