//! [`RunEvent`]: one entry of a run's history, as subscribers and transcripts see it, and
//! [`RunTranscript`]: what the store keeps of a run.

use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use toolbelt_core::{CallResult, ToolCall, ToolErrorKind, Truncation};
use toolbelt_llm::Message;
use toolbelt_router::RouteDecision;

use super::run::{RunStatus, UsageView};
use super::waits::{ApprovalView, QuestionView};

/// One event of a run, as sent over SSE (`id` = `seq`, `event` = `type`, `data` = this JSON).
///
/// Its JSON is `{"seq": N, "type": KIND, "data": {…}}` with the keys of `data` in
/// alphabetical order at every depth, byte for byte what runs wrote when events were untyped
/// JSON. An event this build cannot read as one of its kinds (a stored event of another
/// version) reads as [`RunEventData::Unknown`] and is written back unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvent {
    /// 1-based position in the run's history.
    pub seq: u64,
    /// What happened.
    pub data: RunEventData,
}

impl RunEvent {
    /// The event's kind: its `type` in JSON and its `event` over SSE.
    pub fn kind(&self) -> &str {
        self.data.kind()
    }
}

/// What happened in a run, one variant per kind of event; the `snake_case` variant name is
/// the event's `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunEventData {
    /// The run started.
    Started(Started),
    /// The router chose the tools for a model turn.
    Routed(Box<RouteDecision>),
    /// More text of the model's answer.
    TextDelta {
        /// The text.
        text: String,
    },
    /// The model answered once; `tool_calls` run next.
    ModelTurn {
        /// 1-based number of the model call.
        iteration: u32,
        /// The tool calls it asked for.
        tool_calls: Vec<ToolCall>,
    },
    /// A tool call started.
    ToolCallStarted(ToolCall),
    /// A call waits for a decision.
    ApprovalRequested(ApprovalView),
    /// A person decided on a call.
    ApprovalResolved(ApprovalResolved),
    /// `ask_human` asked a question.
    QuestionAsked(QuestionView),
    /// The question was answered, or stopped waiting.
    QuestionAnswered {
        /// The question.
        question_id: String,
        /// Whether an answer came (false: withdrawn or timed out).
        answered: bool,
    },
    /// A running call reported progress.
    ToolProgress(ToolProgress),
    /// A tool call ended.
    ToolCallFinished(CallReport),
    /// A call repeated in one turn was not run again: it shares `same_as`'s result.
    CallMerged {
        /// The call that was not run.
        call: ToolCall,
        /// The id of the call whose result it shares.
        same_as: String,
    },
    /// A meta tool added tools to the offered set.
    ToolsAdded {
        /// The meta tool.
        by: String,
        /// The tools added.
        tools: Vec<String>,
    },
    /// Skills were chosen for the run.
    SkillsAdded {
        /// Their names, best first.
        skills: Vec<String>,
    },
    /// The run ended with an answer.
    Finished(RunEnd),
    /// The run ended without an answer.
    Failed(RunEnd),
    /// The run was cancelled.
    Cancelled(RunEnd),
    /// The process stopped while the run was going on.
    Interrupted(RunEnd),
    /// An event of a kind, or of a shape, this build does not know (read from the store).
    #[serde(skip)]
    Unknown {
        /// Its `type`.
        kind: String,
        /// Its `data`, as read.
        data: Value,
    },
}

impl RunEventData {
    /// The event's `type`.
    pub fn kind(&self) -> &str {
        match self {
            Self::Started(_) => "started",
            Self::Routed(_) => "routed",
            Self::TextDelta { .. } => "text_delta",
            Self::ModelTurn { .. } => "model_turn",
            Self::ToolCallStarted(_) => "tool_call_started",
            Self::ApprovalRequested(_) => "approval_requested",
            Self::ApprovalResolved(_) => "approval_resolved",
            Self::QuestionAsked(_) => "question_asked",
            Self::QuestionAnswered { .. } => "question_answered",
            Self::ToolProgress(_) => "tool_progress",
            Self::ToolCallFinished(_) => "tool_call_finished",
            Self::CallMerged { .. } => "call_merged",
            Self::ToolsAdded { .. } => "tools_added",
            Self::SkillsAdded { .. } => "skills_added",
            Self::Finished(_) => "finished",
            Self::Failed(_) => "failed",
            Self::Cancelled(_) => "cancelled",
            Self::Interrupted(_) => "interrupted",
            Self::Unknown { kind, .. } => kind,
        }
    }

    /// The event's `data` as JSON (objects with their keys in alphabetical order).
    fn to_data(&self) -> Result<Value, serde_json::Error> {
        if let Self::Unknown { data, .. } = self {
            return Ok(data.clone());
        }
        let mut tagged = serde_json::to_value(self)?;
        Ok(tagged
            .get_mut("data")
            .map(Value::take)
            .unwrap_or(Value::Null))
    }
}

/// `started`: the run's identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Started {
    /// The run.
    pub run_id: String,
    /// The agent.
    pub agent: String,
    /// The user's input.
    pub input: String,
    /// The conversation.
    pub conversation_id: String,
}

/// `approval_resolved`: a person's decision on a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalResolved {
    /// The approval.
    pub approval_id: String,
    /// `approve`, `edit`, `reject` (or `other` for a decision this build does not name).
    pub decision: String,
    /// The new arguments (`edit`), the reason (`reject`), else null.
    pub detail: Value,
}

/// `tool_progress`: one progress report of a running call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolProgress {
    /// The call.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Work done so far.
    pub progress: f64,
    /// Total work, when known.
    pub total: Option<f64>,
    /// What is happening now, when the tool says.
    pub message: Option<String>,
}

impl From<&toolbelt_core::Progress> for ToolProgress {
    fn from(p: &toolbelt_core::Progress) -> Self {
        Self {
            call_id: p.call_id.clone(),
            tool: p.tool.clone(),
            progress: p.progress,
            total: p.total,
            message: p.message.clone(),
        }
    }
}

/// `tool_call_finished`: a finished call, as events and transcripts show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallReport {
    /// The call, with its arguments as executed.
    pub call: ToolCall,
    /// Whether it produced output.
    pub ok: bool,
    /// The output, when `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<CallOutput>,
    /// The error, when not `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<CallFailure>,
    /// Wall time, retries included, in ms.
    pub duration_ms: f64,
    /// Attempts made.
    pub attempts: u32,
    /// Whether the output came from the result cache.
    pub cached: bool,
}

/// A call's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallOutput {
    /// The text the model saw.
    pub text: String,
    /// Structured output, when the tool gave one.
    pub json: Option<Value>,
    /// How the text was shortened, when it was.
    pub truncated: Option<Truncation>,
}

/// Why a call produced no output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallFailure {
    /// The error's kind (its serde name, `timeout`, `denied`, …).
    pub kind: ToolErrorKind,
    /// The error's message.
    pub message: String,
}

impl From<&CallResult> for CallReport {
    fn from(result: &CallResult) -> Self {
        let (output, error) = match &result.outcome {
            Ok(output) => (
                Some(CallOutput {
                    text: output.text.clone(),
                    json: output.json.clone(),
                    truncated: output.truncated.clone(),
                }),
                None,
            ),
            Err(error) => (
                None,
                Some(CallFailure {
                    kind: error.kind(),
                    message: error.to_string(),
                }),
            ),
        };
        Self {
            call: result.call.clone(),
            ok: result.outcome.is_ok(),
            output,
            error,
            duration_ms: result.duration.as_secs_f64() * 1000.0,
            attempts: result.attempts,
            cached: result.cached,
        }
    }
}

/// `finished`, `failed`, `cancelled` and `interrupted`: how the run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    /// The run's status.
    pub status: RunStatus,
    /// The answer, when it succeeded.
    pub answer: Option<String>,
    /// Why it did not.
    pub error: Option<String>,
    /// Tokens used.
    pub usage: UsageView,
}

/// The JSON shape of an event, written and read.
#[derive(Serialize)]
struct WireOut<'a> {
    seq: u64,
    #[serde(rename = "type")]
    kind: &'a str,
    data: Value,
}

#[derive(Deserialize)]
struct WireIn {
    seq: u64,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    data: Value,
}

impl Serialize for RunEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireOut {
            seq: self.seq,
            kind: self.kind(),
            data: self.data.to_data().map_err(S::Error::custom)?,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RunEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireIn::deserialize(deserializer)?;
        let tagged = serde_json::json!({"type": wire.kind, "data": wire.data});
        let data = match RunEventData::deserialize(&tagged) {
            Ok(data) => data,
            Err(_) => {
                let Value::Object(mut tagged) = tagged else {
                    return Err(D::Error::custom("an event is an object"));
                };
                RunEventData::Unknown {
                    kind: wire.kind,
                    data: tagged.remove("data").unwrap_or(Value::Null),
                }
            }
        };
        Ok(Self {
            seq: wire.seq,
            data,
        })
    }
}

/// What the store keeps of a run beside its status: the conversation, the events, the
/// tokens, and what waits for a person (so another instance on the same database finds the
/// run an approval or a question belongs to).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunTranscript {
    /// The conversation as the model saw it last.
    pub messages: Vec<Message>,
    /// Every event so far.
    pub events: Vec<RunEvent>,
    /// Tokens used.
    pub usage: UsageView,
    /// What waits for a person.
    pub pending: PendingWaits,
}

/// The calls and questions a stored run waits on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PendingWaits {
    /// Calls waiting for a decision.
    #[serde(default)]
    pub approvals: Vec<ApprovalView>,
    /// Questions waiting for an answer.
    #[serde(default)]
    pub questions: Vec<QuestionView>,
}

impl RunTranscript {
    /// Reads a stored transcript member by member: a member missing or of another shape is
    /// left empty, the others are still read.
    pub fn read(value: &Value) -> Self {
        fn member<T: serde::de::DeserializeOwned + Default>(value: &Value, key: &str) -> T {
            value
                .get(key)
                .and_then(|v| T::deserialize(v).ok())
                .unwrap_or_default()
        }
        Self {
            messages: member(value, "messages"),
            events: member(value, "events"),
            usage: member(value, "usage"),
            pending: member(value, "pending"),
        }
    }
}

#[cfg(test)]
mod tests;
