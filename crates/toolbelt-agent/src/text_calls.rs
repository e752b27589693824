//! Tool calls written as text by models without (reliable) native tool
//! calling, calls narrated instead of made, and the gate that keeps such
//! text off the answer stream.

mod narration;

use toolbelt_core::{ToolCall, Toolset};

pub(crate) use self::narration::narrated_tool;

/// What a text answer turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TextAnswer {
    /// Plain text: the answer.
    Text(String),
    /// Tool calls (with the prose around them, if any).
    Calls(Option<String>, Vec<ToolCall>),
    /// An attempt at a call that cannot be run; the reason is for the model.
    Malformed(String),
}

/// Whether `text` shows the model tried to write a call.
fn looks_like_a_call(text: &str) -> bool {
    text.contains("<tool_call")
        || text.contains("[TOOL_CALLS]")
        || (text.contains("\"name\"") && text.contains("\"arguments\""))
}

/// Splits `text` into the prose and the tool calls written in it.
///
/// Only calls that name a tool of `offered` (the tools sent in this turn)
/// count; calls of other tools are dropped, and an answer whose calls all
/// name tools not offered is [`TextAnswer::Malformed`], as is text that
/// clearly tries to call a tool but cannot be read. Call ids are made unique
/// within the run from `iteration` (the parser numbers them per text).
pub(crate) fn classify(text: String, offered: &Toolset, iteration: u32) -> TextAnswer {
    let parsed = toolbelt_llm::parse_tool_calls(&text);
    if parsed.tool_calls.is_empty() {
        if looks_like_a_call(&text) {
            return TextAnswer::Malformed(format!(
                "your answer looks like a tool call but could not be read. To call a tool, \
                 answer with only a ```json block holding {{\"name\": \"<tool>\", \"arguments\": \
                 {{...}}}}, using one of: {}. Otherwise answer in plain text.",
                names(offered)
            ));
        }
        return TextAnswer::Text(text);
    }
    let (calls, unknown): (Vec<ToolCall>, Vec<ToolCall>) = parsed
        .tool_calls
        .into_iter()
        .partition(|c| offered.contains(&c.name));
    if calls.is_empty() {
        let named: Vec<String> = unknown.iter().map(|c| format!("`{}`", c.name)).collect();
        return TextAnswer::Malformed(format!(
            "{} {} not among the tools you may call now; call one of: {}, or answer in plain text.",
            named.join(", "),
            if named.len() == 1 { "is" } else { "are" },
            names(offered)
        ));
    }
    if !unknown.is_empty() {
        tracing::warn!(
            dropped = ?unknown.iter().map(|c| &c.name).collect::<Vec<_>>(),
            "text tool calls of tools not offered in this turn were dropped"
        );
    }
    tracing::debug!(calls = calls.len(), "tool calls parsed from text");
    let calls = calls
        .into_iter()
        .enumerate()
        .map(|(i, mut call)| {
            call.id = format!("text_{iteration}_{i}");
            call
        })
        .collect();
    let prose = (!parsed.text.is_empty()).then_some(parsed.text);
    TextAnswer::Calls(prose, calls)
}

fn names(tools: &Toolset) -> String {
    let names = tools.names();
    if names.is_empty() {
        "(none)".to_owned()
    } else {
        names.join(", ")
    }
}

/// Where a written tool call may begin; text from the first of these on is
/// withheld until the answer is complete and known not to be a call.
const TRIGGERS: [&str; 4] = ["```", "<tool_call", "[TOOL_CALLS]", "{"];

/// Passes streamed answer text through until it might be a tool call (or a
/// call narrated instead of made), then holds the rest back;
/// [`TextGate::release`] gives the held text once the answer turned out to be
/// plain text. Text that is a call never leaves it.
#[derive(Debug, Default)]
pub(crate) struct TextGate {
    /// Where held text begins, lowercase (matched ignoring ASCII case); none: the gate is open.
    triggers: Vec<&'static str>,
    pending: String,
    holding: bool,
    sent_any: bool,
}

impl TextGate {
    /// A gate that holds written calls when `calls` and narrated calls
    /// (from a first-person intent phrase on) when `narration`.
    pub(crate) fn new(calls: bool, narration: bool) -> Self {
        let mut triggers = Vec::new();
        if calls {
            triggers.extend(TRIGGERS.map(|t| {
                if t == "[TOOL_CALLS]" {
                    "[tool_calls]"
                } else {
                    t
                }
            }));
        }
        if narration {
            triggers.extend(narration::INTENT);
        }
        Self {
            triggers,
            ..Self::default()
        }
    }

    /// Takes a delta; returns the part that may be shown now.
    pub(crate) fn push(&mut self, delta: &str) -> Option<String> {
        if self.triggers.is_empty() {
            self.sent_any |= !delta.is_empty();
            return (!delta.is_empty()).then(|| delta.to_owned());
        }
        self.pending.push_str(delta);
        if self.holding {
            return None;
        }
        // ASCII lowercasing keeps byte offsets, so they index `pending` too.
        let lower = self.pending.to_ascii_lowercase();
        let safe = match self.triggers.iter().filter_map(|t| lower.find(t)).min() {
            Some(at) => {
                self.holding = true;
                at
            }
            None => self.pending.len() - self.partial_trigger_len(&lower),
        };
        if safe == 0 {
            return None;
        }
        let out: String = self.pending.drain(..safe).collect();
        self.sent_any = true;
        Some(out)
    }

    /// The held text, for an answer that is plain text.
    pub(crate) fn release(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.pending);
        self.holding = false;
        self.sent_any |= !rest.is_empty();
        (!rest.is_empty()).then_some(rest)
    }

    /// Whether any text has been shown.
    pub(crate) fn sent_any(&self) -> bool {
        self.sent_any
    }

    /// Length of the longest end of `text` that could begin a trigger.
    fn partial_trigger_len(&self, text: &str) -> usize {
        self.triggers
            .iter()
            .flat_map(|t| t.char_indices().skip(1).map(move |(n, _)| &t[..n]))
            .filter(|prefix| text.ends_with(prefix))
            .map(str::len)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(gate: &mut TextGate, deltas: &[&str]) -> String {
        deltas.iter().filter_map(|d| gate.push(d)).collect()
    }

    #[test]
    fn plain_text_flows_through_and_calls_are_held() {
        let mut gate = TextGate::new(true, false);
        assert_eq!(run(&mut gate, &["Hello ", "world"]), "Hello world");
        let mut gate = TextGate::new(true, false);
        let shown = run(
            &mut gate,
            &["Sure.\n`", "``json\n{\"name\"", ": \"x\"}\n```"],
        );
        assert_eq!(shown, "Sure.\n");
        assert_eq!(
            gate.release().as_deref(),
            Some("```json\n{\"name\": \"x\"}\n```")
        );
    }

    #[test]
    fn a_split_trigger_is_held_until_it_is_known() {
        let mut gate = TextGate::new(true, false);
        assert_eq!(gate.push("a <tool"), Some("a ".to_owned()));
        assert_eq!(gate.push("kit> b"), Some("<toolkit> b".to_owned()));
    }

    #[test]
    fn a_narration_is_held_from_its_intent_phrase() {
        let mut gate = TextGate::new(false, true);
        let shown = run(&mut gate, &["Sure. I", "'ll use `file_read` now."]);
        assert_eq!(shown, "Sure. ");
        assert_eq!(gate.release().as_deref(), Some("I'll use `file_read` now."));
        let mut gate = TextGate::new(false, true);
        assert_eq!(run(&mut gate, &["好的，", "我将使用 file_read"]), "好的，");
    }

    #[test]
    fn an_inactive_gate_holds_nothing() {
        let mut gate = TextGate::new(false, false);
        assert_eq!(run(&mut gate, &["```json\n{", "}"]), "```json\n{}");
        assert_eq!(gate.release(), None);
    }
}
