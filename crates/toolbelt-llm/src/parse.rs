//! Tool calls written as text, for models without native tool calling.

mod lenient;
mod xml;

use std::collections::HashSet;

use serde_json::{Map, Value};
use toolbelt_core::ToolCall;

use self::lenient::Leniency;

/// Repairs that apply to text-mode calls.
const TEXT: Leniency = Leniency {
    close_brackets: true,
};
/// Repairs that apply to native tool-call arguments: a missing closing bracket
/// there means the answer was cut, so it is not papered over.
const NATIVE: Leniency = Leniency {
    close_brackets: false,
};

/// Longest tool name accepted from text.
const MAX_NAME_LEN: usize = 128;

/// Tool calls found in a model's text, and the text left around them.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ParsedText {
    /// The text without the calls: the pieces around them, trimmed and joined
    /// by newlines.
    pub text: String,
    /// The calls, in the order they appear.
    pub tool_calls: Vec<ToolCall>,
}

/// Finds the tool calls in `text`; never fails and never panics.
///
/// It finds calls in these forms, anywhere in the text:
///
/// - JSON: `{"tool_calls": [{"id": "call_1", "name": "calc", "parameters": {...}}]}`
///   (`arguments`, `args` and `input` work too, and so do OpenAI-style entries
///   `{"function": {"name": .., "arguments": ".."}}`);
/// - XML: `<tool_call id="call_1" name="calc"><parameters><a>10</a></parameters></tool_call>`
///   (child text is read as JSON when it parses, otherwise kept as a string;
///   `<parameter name="a">10</parameter>` children work too);
/// - tagged JSON, as many open models emit it: `<tool_call>{"name": .., "arguments": {..}}</tool_call>`;
/// - fenced blocks (```` ```json ````) whose JSON is one of the shapes above,
///   or several call objects one after the other (every value must be a call),
///   and Mistral's `[TOOL_CALLS] [...]`.
///
/// In `<tool_call name="x">{...}</tool_call>` the JSON body is always the
/// arguments of `x`: it is never read as a call itself, so arguments cannot
/// smuggle in a call of another tool.
///
/// JSON may be damaged the way models damage it (trailing commas, single
/// quotes, unquoted keys, Python literals, missing closing brackets); a cut-off
/// string is never completed. Outside `<tool_call>` tags and `tool_calls`
/// lists, an object counts as a call only with an arguments key, so example
/// JSON such as `{"name": "demo"}` stays text. Given ids are kept when unique;
/// other calls get `call_<position>` (`call_0`, `call_1`, ...). Arguments given as a JSON string that does not parse are kept
/// as [`Value::String`]: see [`unparsed_arguments`].
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use toolbelt_llm::parse_tool_calls;
///
/// let parsed = parse_tool_calls(
///     "Let me check.\n<tool_call>{'name': 'weather', 'arguments': {city: 'Paris',}}</tool_call>",
/// );
/// assert_eq!(parsed.text, "Let me check.");
/// assert_eq!(parsed.tool_calls[0].id, "call_0");
/// assert_eq!(parsed.tool_calls[0].arguments, json!({"city": "Paris"}));
/// ```
pub fn parse_tool_calls(text: &str) -> ParsedText {
    let mut pieces = Vec::new();
    let mut calls = Vec::new();
    let mut kept_from = 0;
    let mut pos = 0;
    let mut scanner = Scanner::default();
    while let Some((start, trigger)) = scanner.next(text, pos) {
        match trigger.read(text, start) {
            Found::Calls(end, found) => {
                pieces.push(&text[kept_from..start]);
                calls.extend(found);
                kept_from = end;
                pos = end;
            }
            Found::Skip(end) => pos = end,
        }
    }
    pieces.push(&text[kept_from..]);
    ParsedText {
        text: pieces
            .iter()
            .map(|p| p.trim())
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        tool_calls: assign_ids(calls),
    }
}

/// The raw text of arguments that were not valid JSON, if `call` has such.
///
/// Native and text-parsed calls whose arguments could not be read keep the
/// call (so the agent can answer the model with an "invalid arguments" tool
/// result) with `arguments` set to a JSON string holding the raw text. Tool
/// arguments are always objects, so a string is unambiguous.
pub fn unparsed_arguments(call: &ToolCall) -> Option<&str> {
    call.arguments.as_str()
}

/// Reads `text` as JSON, repairing the damage models commonly do (trailing
/// commas, single quotes, unquoted keys, Python literals, comments, missing
/// closing brackets at the end). `None` when it is not JSON even so.
pub fn repair_json(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .or_else(|| lenient::parse_all(text, TEXT))
}

/// Decodes the arguments string of a native tool call: `""` is `{}`, light
/// damage is repaired, and anything else is kept raw as a [`Value::String`].
pub(crate) fn decode_native_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Map::new());
    }
    if let Ok(value) = serde_json::from_str(raw) {
        return value;
    }
    match lenient::parse_all(raw, NATIVE) {
        Some(value) => {
            tracing::debug!(raw, "repaired tool-call arguments");
            value
        }
        None => {
            tracing::warn!(raw, "tool-call arguments are not valid JSON; kept raw");
            Value::String(raw.to_owned())
        }
    }
}

/// A call found in text, before ids are assigned.
#[derive(Debug)]
struct RawCall {
    id: Option<String>,
    name: String,
    arguments: Value,
}

enum Found {
    /// Calls that span up to this byte offset.
    Calls(usize, Vec<RawCall>),
    /// Nothing here; continue scanning at this offset.
    Skip(usize),
}

#[derive(Debug, Clone, Copy)]
enum Trigger {
    Tag,
    Fence,
    Mistral,
    Brace,
}

const TRIGGERS: [(&str, Trigger); 4] = [
    ("<tool_call", Trigger::Tag),
    ("```", Trigger::Fence),
    ("[TOOL_CALLS]", Trigger::Mistral),
    ("{", Trigger::Brace),
];

/// Finds the next trigger; remembers where each pattern next occurs so that
/// scanning stays linear however many triggers turn out not to be calls.
#[derive(Default)]
struct Scanner {
    /// Per pattern: not searched yet, or its next position at or after the
    /// last search start (`None`: no more occurrences).
    found: [Option<Option<usize>>; TRIGGERS.len()],
}

impl Scanner {
    fn next(&mut self, text: &str, from: usize) -> Option<(usize, Trigger)> {
        let mut best: Option<(usize, Trigger)> = None;
        for (slot, (pat, trigger)) in self.found.iter_mut().zip(TRIGGERS) {
            let at = match *slot {
                Some(Some(at)) if at >= from => Some(at),
                Some(None) => None,
                _ => text[from..].find(pat).map(|i| from + i),
            };
            *slot = Some(at);
            if let Some(at) = at
                && best.is_none_or(|(b, _)| at < b)
            {
                best = Some((at, trigger));
            }
        }
        best
    }
}

impl Trigger {
    fn read(self, text: &str, start: usize) -> Found {
        // Every trigger starts with an ASCII byte, so `start + 1` is a char boundary.
        let skip = Found::Skip(start + 1);
        match self {
            Self::Tag => read_tag(text, start).unwrap_or(skip),
            Self::Fence => read_fence(text, start),
            Self::Mistral => {
                let body = start + "[TOOL_CALLS]".len();
                read_json_at(text, body, false).unwrap_or(skip)
            }
            Self::Brace => read_json_at(text, start, true).unwrap_or(skip),
        }
    }
}

/// `<tool_call ...>body</tool_call>`; the closing tag may be missing at the end.
fn read_tag(text: &str, start: usize) -> Option<Found> {
    let after_name = start + "<tool_call".len();
    let next = text[after_name..].chars().next()?;
    if !(next == '>' || next.is_whitespace()) {
        return None;
    }
    let open_end = after_name + text[after_name..].find('>')? + 1;
    let attributes = xml::attributes(&text[after_name..open_end - 1]);
    let (body, end) = match text[open_end..].find("</tool_call>") {
        Some(i) => (
            &text[open_end..open_end + i],
            open_end + i + "</tool_call>".len(),
        ),
        None => (&text[open_end..], text.len()),
    };
    let attr = |key: &str| {
        attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let calls = tag_body_calls(strip_fence(body.trim()), attr("name"), attr("id"))?;
    Some(Found::Calls(end, calls))
}

fn tag_body_calls(body: &str, name: Option<String>, id: Option<String>) -> Option<Vec<RawCall>> {
    if body.starts_with('{') || body.starts_with('[') {
        let value = repair_json(body)?;
        return match name {
            // `<tool_call name="x">{args}</tool_call>`: the JSON is always the
            // arguments, never read as a call itself, so arguments that look
            // like a call (`{"name": "shell_exec", ...}`) cannot name another tool.
            Some(name) if valid_name(&name) && value.is_object() => Some(vec![RawCall {
                id,
                name,
                arguments: value,
            }]),
            Some(_) => None,
            None => calls_from_value(&value, true),
        };
    }
    let name = name.filter(|n| valid_name(n))?;
    let params = match xml::element(body, "parameters") {
        Some(inner) => xml::parameters(inner),
        None => xml::parameters(body),
    }?;
    Some(vec![RawCall {
        id,
        name,
        arguments: params,
    }])
}

/// A fenced block: calls when its JSON has a call shape, otherwise skipped whole
/// so that example JSON in it is not mistaken for a call.
fn read_fence(text: &str, start: usize) -> Found {
    let info_start = start + 3;
    let Some(line_end) = text[info_start..].find('\n').map(|i| info_start + i) else {
        return Found::Skip(text.len());
    };
    let body_start = line_end + 1;
    let (body, end) = match text[body_start..].find("```") {
        Some(i) => (&text[body_start..body_start + i], body_start + i + 3),
        None => (&text[body_start..], text.len()),
    };
    let info = text[info_start..line_end].trim();
    let plausible = matches!(
        info,
        "" | "json" | "json5" | "tool_call" | "tool_code" | "tool"
    );
    let body = body.trim();
    let calls = if !plausible {
        None
    } else if body.starts_with("<tool_call") {
        read_tag(body, 0).and_then(|found| match found {
            Found::Calls(_, calls) => Some(calls),
            Found::Skip(_) => None,
        })
    } else {
        fenced_calls(body)
    };
    match calls {
        Some(calls) => Found::Calls(end, calls),
        None => Found::Skip(end),
    }
}

/// The calls in a fenced block's JSON: one value, or several values one after
/// the other (small models put each call of a turn in one block as separate
/// objects). Every value must be a call for the block to count.
fn fenced_calls(body: &str) -> Option<Vec<RawCall>> {
    if let Some(value) = repair_json(body) {
        return calls_from_value(&value, false);
    }
    let mut calls = Vec::new();
    let mut rest = body;
    while !rest.trim().is_empty() {
        let (value, used) = lenient::parse_prefix(rest, TEXT)?;
        if used == 0 {
            return None;
        }
        calls.extend(calls_from_value(&value, false)?);
        rest = rest[used..].trim_start().trim_start_matches([',', ';']);
    }
    (!calls.is_empty()).then_some(calls)
}

/// JSON starting at `start` in prose. With `require_key`, only objects whose
/// first key names a call are tried, which keeps scanning prose cheap.
fn read_json_at(text: &str, start: usize, require_key: bool) -> Option<Found> {
    if require_key && !starts_call_object(&text[start..]) {
        return None;
    }
    let (value, used) = lenient::parse_prefix(&text[start..], TEXT)?;
    let calls = calls_from_value(&value, !require_key)?;
    Some(Found::Calls(start + used, calls))
}

/// Whether `text` (at a `{`) opens an object whose first key is one a call has.
fn starts_call_object(text: &str) -> bool {
    let inner = text[1..].trim_start();
    let inner = inner.trim_start_matches(['"', '\'']);
    ["tool_calls", "name", "function", "id", "type"]
        .iter()
        .any(|key| {
            inner.starts_with(key)
                && inner[key.len()..]
                    .trim_start_matches(['"', '\''])
                    .trim_start()
                    .starts_with(':')
        })
}

/// Removes a surrounding code fence, if any.
fn strip_fence(body: &str) -> &str {
    let Some(rest) = body.strip_prefix("```") else {
        return body;
    };
    let rest = rest.find('\n').map_or("", |i| &rest[i + 1..]);
    rest.trim_end().strip_suffix("```").unwrap_or(rest).trim()
}

/// Calls in a JSON value: `{"tool_calls": [...]}`, an array of calls, or one call.
/// With `tagged` (inside `<tool_call>` or `tool_calls`), a call may omit its
/// arguments; elsewhere an object needs them to count as a call, so that
/// `{"name": "demo", "version": 2}` in prose stays prose.
fn calls_from_value(value: &Value, tagged: bool) -> Option<Vec<RawCall>> {
    let (items, tagged): (Vec<&Value>, bool) = match value {
        Value::Object(obj) => match obj.get("tool_calls") {
            Some(Value::Array(list)) => (list.iter().collect(), true),
            Some(one @ Value::Object(_)) => (vec![one], true),
            Some(_) => return None,
            None => (vec![value], tagged),
        },
        Value::Array(list) => (list.iter().collect(), tagged),
        _ => return None,
    };
    let calls: Vec<RawCall> = items
        .into_iter()
        .filter_map(|item| call_from_value(item, tagged))
        .collect();
    (!calls.is_empty()).then_some(calls)
}

fn call_from_value(value: &Value, tagged: bool) -> Option<RawCall> {
    let obj = value.as_object()?;
    let body = match obj.get("function") {
        Some(Value::Object(function)) => function,
        _ => obj,
    };
    let name = body.get("name")?.as_str()?.trim();
    if !valid_name(name) {
        return None;
    }
    let given = ["arguments", "parameters", "args", "input"]
        .iter()
        .find_map(|key| body.get(*key));
    if given.is_none() && !tagged && !obj.contains_key("function") {
        return None;
    }
    let arguments = given.map_or_else(|| Value::Object(Map::new()), text_arguments);
    let id = obj
        .get("id")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned);
    Some(RawCall {
        id,
        name: name.to_owned(),
        arguments,
    })
}

/// Arguments as written in text: an object as is, a string holding JSON decoded.
fn text_arguments(value: &Value) -> Value {
    match value {
        Value::Null => Value::Object(Map::new()),
        Value::String(raw) if raw.trim().is_empty() => Value::Object(Map::new()),
        Value::String(raw) => repair_json(raw).unwrap_or_else(|| value.clone()),
        other => other.clone(),
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Keeps unique given ids and gives the rest `call_<position>`.
fn assign_ids(raw: Vec<RawCall>) -> Vec<ToolCall> {
    let mut used: HashSet<String> = HashSet::new();
    let mut wanted: Vec<Option<String>> = Vec::with_capacity(raw.len());
    for call in &raw {
        wanted.push(call.id.clone().filter(|id| used.insert(id.clone())));
    }
    raw.into_iter()
        .zip(wanted)
        .enumerate()
        .map(|(position, (call, id))| {
            let id = id.unwrap_or_else(|| {
                let mut candidate = format!("call_{position}");
                let mut n = 1;
                while used.contains(&candidate) {
                    candidate = format!("call_{position}_{n}");
                    n += 1;
                }
                used.insert(candidate.clone());
                candidate
            });
            ToolCall::new(id, call.name, call.arguments)
        })
        .collect()
}

#[cfg(test)]
mod tests;
