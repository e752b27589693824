//! Assembling a streamed Messages answer: content blocks started, filled by
//! deltas and stopped, ending with `message_stop`.

use std::collections::{BTreeMap, VecDeque};

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{Map, Value};
use toolbelt_core::ToolCall;

use super::NAME;
use super::wire::{WireUsage, status_of, stop_reason};
use crate::error::ProviderError;
use crate::parse::decode_native_arguments;
use crate::request::{ChatResponse, StreamEvent, Usage};

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Wire {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: Value,
    },
    ContentBlockDelta {
        index: usize,
        delta: Value,
    },
    ContentBlockStop {},
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop {},
    Ping {},
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct StartMessage {
    #[serde(default)]
    model: String,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Debug, Default, Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// A tool-use block being assembled.
#[derive(Debug)]
struct Partial {
    position: usize,
    id: String,
    name: String,
    /// The `input` given at block start (used when no JSON deltas follow).
    start_input: Value,
    json: String,
}

/// State of one streamed answer.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    text: String,
    /// Tool-use blocks by block index.
    calls: BTreeMap<usize, Partial>,
    stop_reason: Option<String>,
    usage: Usage,
    model: String,
}

impl crate::http::Assembler for Assembler {
    fn on_event(
        &mut self,
        event: &Event,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<bool, ProviderError> {
        if event.data.trim().is_empty() {
            return Ok(false);
        }
        let wire: Wire = serde_json::from_str(&event.data).map_err(|e| ProviderError::Decode {
            provider: NAME,
            message: format!("bad stream event ({e}): {}", event.data),
        })?;
        match wire {
            Wire::MessageStart { message } => {
                self.model = message.model;
                self.usage.input_tokens = message.usage.input().unwrap_or_default();
                self.usage.output_tokens = message.usage.output_tokens.unwrap_or_default();
            }
            Wire::ContentBlockStart {
                index,
                content_block,
            } => self.on_block_start(index, content_block, out),
            Wire::ContentBlockDelta { index, delta } => self.on_delta(index, &delta, out),
            Wire::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(usage) = usage {
                    if let Some(input) = usage.input() {
                        self.usage.input_tokens = input;
                    }
                    if let Some(output) = usage.output_tokens {
                        self.usage.output_tokens = output;
                    }
                }
            }
            Wire::MessageStop {} => return Ok(true),
            Wire::Error { error } => {
                let kind = error.get("type").and_then(Value::as_str).unwrap_or("");
                return Err(ProviderError::Api {
                    provider: NAME,
                    status: status_of(kind),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .map_or_else(|| error.to_string(), str::to_owned),
                });
            }
            Wire::ContentBlockStop {} | Wire::Ping {} | Wire::Unknown => {}
        }
        Ok(false)
    }

    fn finish(self, terminated: bool) -> Result<ChatResponse, ProviderError> {
        if !terminated && self.stop_reason.is_none() {
            return Err(crate::http::ended_early(NAME));
        }
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_values()
            .map(|c| {
                let arguments = if c.json.trim().is_empty() {
                    c.start_input
                } else {
                    decode_native_arguments(&c.json)
                };
                ToolCall::new(c.id, c.name, arguments)
            })
            .collect();
        Ok(ChatResponse {
            content: (!self.text.is_empty()).then_some(self.text),
            finish_reason: stop_reason(self.stop_reason.as_deref(), !tool_calls.is_empty()),
            tool_calls,
            usage: self.usage,
            model: self.model,
        })
    }
}

impl Assembler {
    fn on_block_start(&mut self, index: usize, block: Value, out: &mut VecDeque<StreamEvent>) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    self.push_text(text, out);
                }
            }
            Some("tool_use") => {
                let position = self.calls.len();
                let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                out.push_back(StreamEvent::ToolCallStarted {
                    index: position,
                    id: id.to_owned(),
                    name: name.to_owned(),
                });
                let start_input = match block.get("input") {
                    Some(input @ Value::Object(_)) => input.clone(),
                    _ => Value::Object(Map::new()),
                };
                self.calls.insert(
                    index,
                    Partial {
                        position,
                        id: id.to_owned(),
                        name: name.to_owned(),
                        start_input,
                        json: String::new(),
                    },
                );
            }
            _ => {}
        }
    }

    fn on_delta(&mut self, index: usize, delta: &Value, out: &mut VecDeque<StreamEvent>) {
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                if let Some(text) = delta.get("text").and_then(Value::as_str) {
                    self.push_text(text, out);
                }
            }
            Some("input_json_delta") => {
                let fragment = delta
                    .get("partial_json")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let (Some(call), false) = (self.calls.get_mut(&index), fragment.is_empty()) {
                    call.json.push_str(fragment);
                    out.push_back(StreamEvent::ToolCallDelta {
                        index: call.position,
                        arguments: fragment.to_owned(),
                    });
                }
            }
            // Thinking, signatures, citations: not part of the answer text.
            _ => {}
        }
    }

    fn push_text(&mut self, text: &str, out: &mut VecDeque<StreamEvent>) {
        if !text.is_empty() {
            self.text.push_str(text);
            out.push_back(StreamEvent::TextDelta(text.to_owned()));
        }
    }
}
