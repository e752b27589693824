//! [`ToolCall`] and [`CallResult`]: a request to run a tool and what came of it.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;
use crate::output::ToolOutput;

/// A model's request to run one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (or one made up for text-parsed calls).
    pub id: String,
    /// The tool name as the model wrote it.
    pub name: String,
    /// The arguments, as parsed JSON.
    pub arguments: Value,
}

impl ToolCall {
    /// A call of `name` with `arguments`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// The outcome of one executed call, in the order the calls were given.
///
/// As JSON: `{"call", "outcome": {"ok": output} | {"error": {"kind", …}}, "duration_ms",
/// "attempts", "cached"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallResult {
    /// The call, with arguments as finally executed (an approver may edit them).
    pub call: ToolCall,
    /// Output or the error the model will see.
    #[serde(with = "outcome_serde")]
    pub outcome: Result<ToolOutput, ToolError>,
    /// Wall time from start to finish, retries included.
    #[serde(rename = "duration_ms", with = "crate::duration_serde::millis")]
    pub duration: Duration,
    /// Attempts made (1 without retries; 0 when refused before running).
    pub attempts: u32,
    /// Whether the output came from the result cache.
    pub cached: bool,
}

impl CallResult {
    /// The text the model sees: the output text or the error message.
    pub fn to_model_text(&self) -> String {
        match &self.outcome {
            Ok(out) => out.text.clone(),
            Err(err) => err.to_model_message(),
        }
    }

    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        self.outcome.is_ok()
    }
}

/// `Result<ToolOutput, ToolError>` as `{"ok": …}` or `{"error": …}`.
mod outcome_serde {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::{ToolError, ToolOutput};

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Outcome<O, E> {
        Ok(O),
        Error(E),
    }

    pub(super) fn serialize<S: Serializer>(
        outcome: &Result<ToolOutput, ToolError>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match outcome {
            Ok(out) => Outcome::<&ToolOutput, &ToolError>::Ok(out).serialize(s),
            Err(err) => Outcome::<&ToolOutput, &ToolError>::Error(err).serialize(s),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Result<ToolOutput, ToolError>, D::Error> {
        Ok(match Outcome::<ToolOutput, ToolError>::deserialize(d)? {
            Outcome::Ok(out) => Ok(out),
            Outcome::Error(err) => Err(err),
        })
    }
}
