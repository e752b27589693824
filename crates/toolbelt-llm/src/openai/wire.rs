//! OpenAI chat-completions wire format: request bodies and answers.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolbelt_core::ToolCall;

use crate::message::Message;
use crate::normalize::{SchemaDialect, is_strict_compatible, normalize_schema};
use crate::parse::decode_native_arguments;
use crate::request::{ChatRequest, ChatResponse, FinishReason, ToolChoice, ToolSchema, Usage};

/// Client settings that shape the body.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) model: String,
    pub(crate) dialect: SchemaDialect,
    pub(crate) stream_usage: bool,
    pub(crate) max_tokens_field: &'static str,
}

/// The JSON body for `request`.
pub(crate) fn request_body(options: &Options, request: &ChatRequest, stream: bool) -> Value {
    let mut body = Map::new();
    let model = request.model.as_deref().unwrap_or(&options.model);
    body.insert("model".to_owned(), Value::from(model));
    let messages = request.messages.iter().map(message).collect();
    body.insert("messages".to_owned(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|t| tool(t, options.dialect))
            .collect();
        body.insert("tools".to_owned(), Value::Array(tools));
        body.insert("tool_choice".to_owned(), tool_choice(&request.tool_choice));
        if let Some(parallel) = request.parallel_tool_calls {
            body.insert("parallel_tool_calls".to_owned(), Value::Bool(parallel));
        }
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".to_owned(), crate::http::float(t));
    }
    if let Some(seed) = request.seed {
        body.insert("seed".to_owned(), Value::from(seed));
    }
    if let Some(max) = request.max_tokens {
        body.insert(options.max_tokens_field.to_owned(), Value::from(max));
    }
    if stream {
        body.insert("stream".to_owned(), Value::Bool(true));
        if options.stream_usage {
            body.insert("stream_options".to_owned(), json!({"include_usage": true}));
        }
    }
    Value::Object(body)
}

fn message(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut out = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                out["tool_calls"] = tool_calls.iter().map(call).collect();
            }
            out
        }
        Message::Tool {
            call_id, content, ..
        } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
    }
}

fn call(call: &ToolCall) -> Value {
    // Arguments that were not JSON go back as `{}`: servers that render the history
    // through a chat template (llama.cpp's) refuse the whole request when a call's
    // arguments do not parse. The tool result beside the call quotes what the model wrote.
    let arguments = match &call.arguments {
        Value::String(_) => "{}".to_owned(),
        other => other.to_string(),
    };
    json!({
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    })
}

fn tool(tool: &ToolSchema, dialect: SchemaDialect) -> Value {
    let strict = dialect == SchemaDialect::OpenAiStrict && is_strict_compatible(&tool.parameters);
    let dialect = match dialect {
        SchemaDialect::OpenAiStrict if !strict => SchemaDialect::OpenAi,
        other => other,
    };
    let mut function = json!({
        "name": tool.name,
        "description": tool.description,
        "parameters": normalize_schema(&tool.parameters, dialect),
    });
    if strict {
        function["strict"] = Value::Bool(true);
    }
    json!({"type": "function", "function": function})
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::None => Value::from("none"),
        ToolChoice::Required => Value::from("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        _ => Value::from("auto"),
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Self {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
        }
    }
}

#[derive(Debug, Deserialize)]
struct Completion {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

#[derive(Debug, Deserialize)]
struct WireCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

/// A whole (non-streamed) answer.
pub(crate) fn parse_response(bytes: &[u8]) -> Result<ChatResponse, String> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("the answer is not JSON: {e}"))?;
    // Some gateways (OpenRouter) answer 200 with an error object.
    if value.get("choices").is_none()
        && let Some(message) = value
            .get("error")
            .and_then(|_| crate::http::message_in(&value))
    {
        return Err(format!("the answer is an error: {message}"));
    }
    let completion: Completion =
        serde_json::from_value(value).map_err(|e| format!("unexpected answer shape: {e}"))?;
    let choice = completion
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| "the answer has no choices".to_owned())?;
    let tool_calls: Vec<ToolCall> = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let arguments = match c.function.arguments {
                Some(Value::String(raw)) => decode_native_arguments(&raw),
                Some(Value::Null) | None => Value::Object(Map::new()),
                Some(other) => other,
            };
            ToolCall::new(
                c.id.filter(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("call_{i}")),
                c.function.name,
                arguments,
            )
        })
        .collect();
    Ok(ChatResponse {
        content: choice.message.content.as_ref().and_then(text_of),
        finish_reason: finish_reason(choice.finish_reason.as_deref(), !tool_calls.is_empty()),
        tool_calls,
        usage: completion.usage.map(Usage::from).unwrap_or_default(),
        model: completion.model.unwrap_or_default(),
    })
}

/// Text content: a string, or the text parts of a content array.
fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Array(parts) => {
            let text: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!text.is_empty()).then_some(text)
        }
        _ => None,
    }
}

/// Maps `finish_reason`; servers that say `stop` while calling tools are
/// reported as [`FinishReason::ToolCalls`].
pub(super) fn finish_reason(reason: Option<&str>, has_calls: bool) -> FinishReason {
    match reason {
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        _ if has_calls => FinishReason::ToolCalls,
        Some("stop") | None => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}
