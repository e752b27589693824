//! [`RunEvent`]: one entry of a run's history, as subscribers and transcripts see it.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolbelt_core::CallResult;

/// One event of a run, as sent over SSE (`id` = `seq`, `event` = `type`, `data` = this JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    /// 1-based position in the run's history.
    pub seq: u64,
    /// `started`, `routed`, `text_delta`, `model_turn`, `tool_call_started`,
    /// `approval_requested`, `approval_resolved`, `question_asked`, `question_answered`,
    /// `tool_progress` (`call_id`, `tool`, `progress`, `total`, `message`),
    /// `tool_call_finished`, `call_merged` (`call`, `same_as`: a call repeated in one turn,
    /// not run again), `tools_added`, `skills_added` (`skills`), `finished`, `failed`,
    /// `cancelled`, `interrupted`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The event's fields.
    pub data: Value,
}

/// The JSON of a finished call, as events and transcripts show it (an error's `kind` is the
/// [`toolbelt_core::ToolErrorKind`]'s serde name).
pub fn call_result_json(result: &CallResult) -> Value {
    match &result.outcome {
        Ok(output) => json!({
            "call": result.call,
            "ok": true,
            "output": {"text": output.text, "json": output.json, "truncated": output.truncated},
            "duration_ms": result.duration.as_secs_f64() * 1000.0,
            "attempts": result.attempts,
            "cached": result.cached,
        }),
        Err(error) => json!({
            "call": result.call,
            "ok": false,
            "error": {"kind": error.kind(), "message": error.to_string()},
            "duration_ms": result.duration.as_secs_f64() * 1000.0,
            "attempts": result.attempts,
            "cached": result.cached,
        }),
    }
}

#[cfg(test)]
mod tests {
    use toolbelt_core::ToolErrorKind as K;

    /// The error kinds of call results kept the spelling they had before they were written
    /// through serde (`kind_name` of the server's metrics).
    #[test]
    fn error_kinds_are_spelled_as_before() {
        let kinds = [
            (K::UnknownTool, "unknown_tool"),
            (K::InvalidArguments, "invalid_arguments"),
            (K::Timeout, "timeout"),
            (K::Denied, "denied"),
            (K::Cancelled, "cancelled"),
            (K::Failed, "failed"),
        ];
        for (kind, name) in kinds {
            assert_eq!(serde_json::to_value(kind).unwrap(), name);
        }
    }
}
