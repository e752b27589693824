//! Assembling a streamed chat completion: text deltas and tool-call deltas
//! keyed by index, ending with `data: [DONE]`.

use std::collections::VecDeque;

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::ToolCall;

use super::NAME;
use super::wire::{WireUsage, finish_reason};
use crate::error::ProviderError;
use crate::parse::decode_native_arguments;
use crate::request::{ChatResponse, StreamEvent, Usage};

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Debug, Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// A tool call being assembled.
#[derive(Debug, Default)]
struct Partial {
    wire_index: Option<usize>,
    id: String,
    name: String,
    arguments: String,
    started: bool,
    /// Bytes of `arguments` already sent as [`StreamEvent::ToolCallDelta`].
    emitted: usize,
}

/// State of one streamed answer.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    text: String,
    calls: Vec<Partial>,
    finish: Option<String>,
    usage: Option<Usage>,
    model: Option<String>,
}

impl crate::http::Assembler for Assembler {
    fn on_event(
        &mut self,
        event: &Event,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<bool, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| ProviderError::Decode {
            provider: NAME,
            message: format!("bad stream chunk ({e}): {data}"),
        })?;
        if let Some(error) = chunk.error {
            return Err(ProviderError::Api {
                provider: NAME,
                status: error
                    .get("code")
                    .and_then(Value::as_u64)
                    .and_then(|c| u16::try_from(c).ok())
                    .unwrap_or(500),
                message: crate::http::message_in(&serde_json::json!({ "error": error }))
                    .unwrap_or_else(|| error.to_string()),
            });
        }
        if let Some(model) = chunk.model.filter(|m| !m.is_empty()) {
            self.model = Some(model);
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    self.text.push_str(&text);
                    out.push_back(StreamEvent::TextDelta(text));
                }
                for call in delta.tool_calls.unwrap_or_default() {
                    self.on_call_delta(call, out);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason);
            }
        }
        Ok(false)
    }

    fn finish(self, terminated: bool) -> Result<ChatResponse, ProviderError> {
        if !terminated && self.finish.is_none() {
            return Err(crate::http::ended_early(NAME));
        }
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .map(|c| ToolCall::new(c.id, c.name, decode_native_arguments(&c.arguments)))
            .collect();
        Ok(ChatResponse {
            content: (!self.text.is_empty()).then_some(self.text),
            finish_reason: finish_reason(self.finish.as_deref(), !tool_calls.is_empty()),
            tool_calls,
            usage: self.usage.unwrap_or_default(),
            model: self.model.unwrap_or_default(),
        })
    }
}

impl Assembler {
    fn on_call_delta(&mut self, delta: CallDelta, out: &mut VecDeque<StreamEvent>) {
        let position = self.position_for(&delta);
        let call = &mut self.calls[position];
        if let Some(id) = delta.id.filter(|id| !id.is_empty())
            && call.id.is_empty()
        {
            call.id = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name {
                call.name.push_str(&name);
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
        if !call.started && !call.name.is_empty() {
            call.started = true;
            if call.id.is_empty() {
                call.id = format!("call_{position}");
            }
            out.push_back(StreamEvent::ToolCallStarted {
                index: position,
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
        if call.started && call.arguments.len() > call.emitted {
            out.push_back(StreamEvent::ToolCallDelta {
                index: position,
                arguments: call.arguments[call.emitted..].to_owned(),
            });
            call.emitted = call.arguments.len();
        }
    }

    /// Which call a delta belongs to: by wire index, unless it carries a new
    /// id (some servers send every call with index 0); without an index, the
    /// call with its id or else the last one.
    fn position_for(&mut self, delta: &CallDelta) -> usize {
        let new_id = |call: &Partial| {
            delta
                .id
                .as_deref()
                .is_some_and(|id| !id.is_empty() && !call.id.is_empty() && call.id != id)
        };
        let found = match delta.index {
            Some(index) => self
                .calls
                .iter()
                .rposition(|c| c.wire_index == Some(index))
                .filter(|&p| !new_id(&self.calls[p])),
            None => match delta.id.as_deref().filter(|id| !id.is_empty()) {
                Some(id) => self.calls.iter().position(|c| c.id == id),
                None => self.calls.len().checked_sub(1),
            },
        };
        found.unwrap_or_else(|| {
            self.calls.push(Partial {
                wire_index: delta.index,
                ..Partial::default()
            });
            self.calls.len() - 1
        })
    }
}

#[cfg(test)]
mod tests;
