//! [`ToolOutput`]: what a tool returns.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;

/// The result of a successful call: text for the model, and optionally JSON.
///
/// This mirrors MCP's `content` + `structuredContent`: `text` is what an LLM
/// reads; `json` is the same result as data for programs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolOutput {
    /// Text for the model.
    pub text: String,
    /// Structured result, when the tool has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
    /// Set when the executor shortened the text; says how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncation>,
}

/// How an output was cut to fit its size limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Truncation {
    /// Size of the full text in bytes.
    pub original_bytes: usize,
    /// Bytes kept.
    pub kept_bytes: usize,
    /// Where the full text was written, when it was spilled to a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spilled_to: Option<String>,
}

impl ToolOutput {
    /// A text-only output.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            json: None,
            truncated: None,
        }
    }

    /// A JSON output; its text is the compact JSON.
    pub fn json(value: Value) -> Self {
        let text = match &value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Self {
            text,
            json: Some(value),
            truncated: None,
        }
    }

    /// Serialises `value` as the JSON output.
    ///
    /// # Errors
    /// [`ToolError::Failed`] if `value` cannot be serialised.
    pub fn from_serialize<T: Serialize>(value: &T) -> Result<Self, ToolError> {
        serde_json::to_value(value)
            .map(Self::json)
            .map_err(|e| ToolError::failed(format!("could not serialise the result: {e}")))
    }
}

/// Conversion of a tool function's return value into a [`ToolOutput`].
///
/// Implemented for text, JSON values, `()` and [`ToolOutput`]; wrap any other
/// `Serialize` type in [`Json`].
pub trait IntoToolOutput {
    /// Performs the conversion.
    ///
    /// # Errors
    /// When the value cannot be represented (e.g. serialisation fails).
    fn into_tool_output(self) -> Result<ToolOutput, ToolError>;
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(self)
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self))
    }
}

impl IntoToolOutput for &str {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self))
    }
}

impl IntoToolOutput for Value {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::json(self))
    }
}

impl IntoToolOutput for () {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

macro_rules! display_output {
    ($($t:ty),*) => {$(
        impl IntoToolOutput for $t {
            fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
                Ok(ToolOutput::json(Value::from(self)))
            }
        }
    )*};
}
display_output!(bool, i32, i64, u32, u64, usize, f32, f64);

/// Wraps any `Serialize` value as a JSON tool output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolOutput for Json<T> {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        ToolOutput::from_serialize(&self.0)
    }
}

impl<T: IntoToolOutput, E: Into<ToolError>> IntoToolOutput for Result<T, E> {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        self.map_err(Into::into)
            .and_then(IntoToolOutput::into_tool_output)
    }
}
