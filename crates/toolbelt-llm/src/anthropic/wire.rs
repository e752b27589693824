//! Anthropic Messages wire format: request bodies and answers.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolbelt_core::ToolCall;

use crate::message::Message;
use crate::normalize::{SchemaDialect, normalize_schema};
use crate::request::{ChatRequest, ChatResponse, FinishReason, ToolChoice, Usage};

/// Client settings that shape the body.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) model: String,
    pub(crate) max_tokens: u32,
}

/// The JSON body for `request`.
pub(crate) fn request_body(options: &Options, request: &ChatRequest, stream: bool) -> Value {
    let mut body = Map::new();
    let model = request.model.as_deref().unwrap_or(&options.model);
    body.insert("model".to_owned(), Value::from(model));
    body.insert(
        "max_tokens".to_owned(),
        Value::from(request.max_tokens.unwrap_or(options.max_tokens)),
    );
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::System { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    if !system.is_empty() {
        body.insert("system".to_owned(), Value::from(system.join("\n\n")));
    }
    body.insert(
        "messages".to_owned(),
        Value::Array(messages(&request.messages)),
    );
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": normalize_schema(&t.parameters, SchemaDialect::Anthropic),
                })
            })
            .collect();
        body.insert("tools".to_owned(), Value::Array(tools));
        body.insert(
            "tool_choice".to_owned(),
            tool_choice(&request.tool_choice, request.parallel_tool_calls),
        );
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".to_owned(), crate::http::float(t));
    }
    if stream {
        body.insert("stream".to_owned(), Value::Bool(true));
    }
    Value::Object(body)
}

fn tool_choice(choice: &ToolChoice, parallel: Option<bool>) -> Value {
    let mut out = match choice {
        ToolChoice::None => return json!({"type": "none"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        _ => json!({"type": "auto"}),
    };
    if parallel == Some(false) {
        out["disable_parallel_tool_use"] = Value::Bool(true);
    }
    out
}

/// Conversation messages as alternating user/assistant turns: system
/// messages are left out (they go to `system`), tool results join the user
/// turn they border, and `tool_result` blocks come first in a user turn as
/// the API requires.
fn messages(messages: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::System { .. } => continue,
            Message::User { content } => ("user", vec![text_block(content)]),
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
                if *is_error {
                    block["is_error"] = Value::Bool(true);
                }
                ("user", vec![block])
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks: Vec<Value> = content
                    .iter()
                    .filter(|t| !t.is_empty())
                    .map(|t| text_block(t))
                    .collect();
                blocks.extend(tool_calls.iter().map(tool_use_block));
                ("assistant", blocks)
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, mut blocks)| {
            if role == "user" {
                // Stable: tool results first, then text, each in original order.
                blocks.sort_by_key(|b| b["type"] != "tool_result");
            }
            json!({"role": role, "content": blocks})
        })
        .collect()
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn tool_use_block(call: &ToolCall) -> Value {
    // `input` must be an object; unparsed arguments cannot be sent back as such.
    let input = match &call.arguments {
        Value::Object(_) => call.arguments.clone(),
        _ => Value::Object(Map::new()),
    };
    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Input tokens including cache writes and reads, which Anthropic counts apart.
    pub(super) fn input(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    }
}

#[derive(Debug, Deserialize)]
struct MessageResponse {
    #[serde(default)]
    model: String,
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

/// A whole (non-streamed) answer.
pub(crate) fn parse_response(bytes: &[u8]) -> Result<ChatResponse, String> {
    let message: MessageResponse =
        serde_json::from_slice(bytes).map_err(|e| format!("unexpected answer shape: {e}"))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in &message.content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => tool_calls.push(ToolCall::new(
                block.get("id").and_then(Value::as_str).unwrap_or_default(),
                block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                block.get("input").cloned().unwrap_or_else(|| json!({})),
            )),
            // Thinking and other block kinds carry nothing the agent uses.
            _ => {}
        }
    }
    Ok(ChatResponse {
        content: (!text.is_empty()).then_some(text),
        finish_reason: stop_reason(message.stop_reason.as_deref(), !tool_calls.is_empty()),
        tool_calls,
        usage: Usage {
            input_tokens: message.usage.input().unwrap_or_default(),
            output_tokens: message.usage.output_tokens.unwrap_or_default(),
        },
        model: message.model,
    })
}

/// Maps `stop_reason` to a [`FinishReason`].
pub(super) fn stop_reason(reason: Option<&str>, has_calls: bool) -> FinishReason {
    match reason {
        Some("tool_use") => FinishReason::ToolCalls,
        _ if has_calls => FinishReason::ToolCalls,
        Some("end_turn" | "stop_sequence") | None => FinishReason::Stop,
        Some("max_tokens") => FinishReason::Length,
        Some("refusal") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// The HTTP status an in-stream `error` event stands for.
pub(super) fn status_of(error_type: &str) -> u16 {
    match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        _ => 500,
    }
}
