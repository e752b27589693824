//! [`ChatRequest`], [`ChatResponse`] and their parts.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbelt_core::{ToolCall, ToolSpec};

use crate::message::Message;

/// A tool as offered to a model: name, description, JSON Schema parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// The tool name.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the arguments (normalised per provider before sending).
    pub parameters: Value,
}

impl From<&ToolSpec> for ToolSchema {
    fn from(spec: &ToolSpec) -> Self {
        Self {
            name: spec.name.to_string(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
        }
    }
}

/// Whether and which tools the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// A call of this tool.
    Tool(String),
}

/// One request to a chat model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatRequest {
    /// Model id; `None` uses the provider's configured model.
    pub model: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    pub tools: Vec<ToolSchema>,
    /// Whether and which tools must be called.
    pub tool_choice: ToolChoice,
    /// Whether the model may ask for several calls in one turn (`None`: provider default).
    pub parallel_tool_calls: Option<bool>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Most tokens to generate (OpenAI-compatible: `max_tokens`, or
    /// `max_completion_tokens` when the client is set so; Anthropic:
    /// `max_tokens`, where the client's default applies when unset).
    pub max_tokens: Option<u32>,
    /// Sampling seed, for repeatable answers where the server honours it
    /// (OpenAI-compatible `seed`; Anthropic has none and it is not sent).
    pub seed: Option<u64>,
}

impl ChatRequest {
    /// A request with these messages and nothing else set.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// Offers these tools.
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<ToolSchema>) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the tool choice.
    #[must_use]
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Sets the model.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// It finished its answer.
    #[default]
    Stop,
    /// It asked for tool calls.
    ToolCalls,
    /// It hit the token limit.
    Length,
    /// The provider filtered the content.
    ContentFilter,
    /// Anything else, as the provider said it.
    Other(String),
}

/// Tokens used by one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Both counts added.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
    }
}

/// A model's complete answer to a [`ChatRequest`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatResponse {
    /// Text of the answer, if any.
    pub content: Option<String>,
    /// Tool calls, in the order the model gave them.
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// Tokens used.
    pub usage: Usage,
    /// The model that answered, as the provider reported it.
    pub model: String,
}

impl ChatResponse {
    /// A text answer.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()),
            ..Self::default()
        }
    }

    /// An answer that calls tools.
    pub fn tool_calls(tool_calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls,
            finish_reason: FinishReason::ToolCalls,
            ..Self::default()
        }
    }

    /// The assistant message to append to the conversation.
    pub fn to_message(&self) -> Message {
        Message::assistant_tool_calls(self.content.clone(), self.tool_calls.clone())
    }
}

/// One piece of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// More text.
    TextDelta(String),
    /// The model began a tool call (arguments follow as they stream).
    ToolCallStarted {
        /// Position of the call in the answer.
        index: usize,
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// A fragment of a call's JSON arguments.
    ToolCallDelta {
        /// Position of the call in the answer.
        index: usize,
        /// The raw fragment.
        arguments: String,
    },
    /// The whole answer, assembled: always the last event of a successful stream.
    Completed(ChatResponse),
}
