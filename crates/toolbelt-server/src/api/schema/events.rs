//! The twins of a run event's `data`, one per kind (`toolbelt_host::runs::RunEventData`): the
//! event's `type` says which one its `data` is. Like the run views, they are answers and carry
//! no `deny_unknown_fields`; the tests write each kind's real data and read it back whole.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{
    ApprovalViewSchema, QuestionViewSchema, RunStatusSchema, ToolCallSchema, UsageViewSchema,
};

/// The `data` of a run event; its `type` says which of these it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
#[schema(as = RunEventData)]
pub enum RunEventDataSchema {
    /// `started`.
    Started(StartedData),
    /// `routed`.
    Routed(RouteDecisionSchema),
    /// `text_delta`.
    TextDelta(TextDeltaData),
    /// `model_turn`.
    ModelTurn(ModelTurnData),
    /// `tool_call_started`: the call.
    ToolCallStarted(ToolCallSchema),
    /// `approval_requested`: what waits for a decision.
    ApprovalRequested(ApprovalViewSchema),
    /// `approval_resolved`.
    ApprovalResolved(ApprovalResolvedData),
    /// `question_asked`: what waits for an answer.
    QuestionAsked(QuestionViewSchema),
    /// `question_answered`.
    QuestionAnswered(QuestionAnsweredData),
    /// `tool_progress`.
    ToolProgress(ToolProgressData),
    /// `tool_call_finished`.
    ToolCallFinished(CallReportSchema),
    /// `call_merged`.
    CallMerged(CallMergedData),
    /// `tools_added`.
    ToolsAdded(ToolsAddedData),
    /// `skills_added`.
    SkillsAdded(SkillsAddedData),
    /// `finished`, `failed`, `cancelled` and `interrupted`.
    Ended(RunEndSchema),
}

/// `started`: the run's identity (`toolbelt_host::runs::Started`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = StartedData)]
pub struct StartedData {
    /// The run.
    pub run_id: String,
    /// The agent.
    pub agent: String,
    /// The user's input.
    pub input: String,
    /// The conversation.
    pub conversation_id: String,
}

/// `routed`: the router's decision for a model turn (`toolbelt_router::RouteDecision`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = RouteDecision)]
pub struct RouteDecisionSchema {
    /// What to do.
    pub outcome: RouteOutcomeSchema,
    /// The tools sent, best first.
    pub tools: Vec<ScoredToolSchema>,
    /// The groups chosen, when the router works by group.
    pub groups: Vec<String>,
    /// Skills chosen for the turn, best first (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<ScoredToolSchema>,
    /// Whether the router was unsure and sent every tool.
    pub fallback: bool,
    /// Set when the router was unsure but the toolset was too large to send whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounded_fallback: Option<BoundedFallbackSchema>,
    /// Which router decided.
    pub router: String,
    /// A short reason.
    pub reason: String,
}

/// What the router says to do (`toolbelt_router::RouteOutcome`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schema(as = RouteOutcome)]
pub enum RouteOutcomeSchema {
    /// Call the model with `tools`.
    Tools,
    /// Answer without tools.
    Direct,
    /// Ask the user first.
    Clarify {
        /// The question.
        question: String,
    },
}

/// A tool (or skill) and its score (`toolbelt_router::ScoredTool`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = ScoredTool)]
pub struct ScoredToolSchema {
    /// Its name.
    pub name: String,
    /// Its score.
    pub score: f32,
}

/// The best few sent instead of a too large toolset (`toolbelt_router::BoundedFallback`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = BoundedFallback)]
pub struct BoundedFallbackSchema {
    /// Tools the router chose from.
    pub toolset_size: usize,
    /// The most it may send.
    pub limit: usize,
    /// How many it sent.
    pub sent: usize,
    /// Whether `search_tools` was among them.
    pub search_tools: bool,
}

/// `text_delta`: more text of the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = TextDeltaData)]
pub struct TextDeltaData {
    /// The text.
    pub text: String,
}

/// `model_turn`: the model answered once; its calls run next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = ModelTurnData)]
pub struct ModelTurnData {
    /// 1-based number of the model call.
    pub iteration: u32,
    /// The calls it asked for.
    pub tool_calls: Vec<ToolCallSchema>,
}

/// `approval_resolved`: a person's decision (`toolbelt_host::runs::ApprovalResolved`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = ApprovalResolvedData)]
pub struct ApprovalResolvedData {
    /// The approval.
    pub approval_id: String,
    /// `approve`, `edit`, `reject` (or `other`).
    pub decision: String,
    /// The new arguments (`edit`), the reason (`reject`), else null.
    #[schema(value_type = Value)]
    pub detail: Value,
}

/// `question_answered`: the question was answered, or stopped waiting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = QuestionAnsweredData)]
pub struct QuestionAnsweredData {
    /// The question.
    pub question_id: String,
    /// Whether an answer came (false: withdrawn or timed out).
    pub answered: bool,
}

/// `tool_progress`: a running call's progress (`toolbelt_host::runs::ToolProgress`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = ToolProgressData)]
pub struct ToolProgressData {
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

/// `tool_call_finished`: a finished call (`toolbelt_host::runs::CallReport`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = CallReport)]
pub struct CallReportSchema {
    /// The call, with its arguments as executed.
    pub call: ToolCallSchema,
    /// Whether it produced output.
    pub ok: bool,
    /// The output, when `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<CallOutputSchema>,
    /// The error, when not `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<CallFailureSchema>,
    /// Wall time, retries included, in ms.
    pub duration_ms: f64,
    /// Attempts made.
    pub attempts: u32,
    /// Whether the output came from the result cache.
    pub cached: bool,
}

/// A call's output (`toolbelt_host::runs::CallOutput`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = CallOutput)]
pub struct CallOutputSchema {
    /// The text the model saw.
    pub text: String,
    /// Structured output (any JSON), when the tool gave one.
    #[schema(value_type = Option<Value>)]
    pub json: Option<Value>,
    /// How the text was shortened, when it was.
    pub truncated: Option<TruncationSchema>,
}

/// How an output was cut to fit (`toolbelt_core::Truncation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = Truncation)]
pub struct TruncationSchema {
    /// Size of the full text in bytes.
    pub original_bytes: usize,
    /// Bytes kept.
    pub kept_bytes: usize,
    /// Where the full text was written, when it was spilled to a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spilled_to: Option<String>,
}

/// Why a call produced no output (`toolbelt_host::runs::CallFailure`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = CallFailure)]
pub struct CallFailureSchema {
    /// The error's kind.
    pub kind: ToolErrorKindSchema,
    /// The error's message.
    pub message: String,
}

/// The kind of a tool error (`toolbelt_core::ToolErrorKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = ToolErrorKind)]
pub enum ToolErrorKindSchema {
    /// The model named a tool that is not in its toolset.
    UnknownTool,
    /// The arguments broke the parameter schema.
    InvalidArguments,
    /// The call exceeded its timeout.
    Timeout,
    /// A policy or a person refused the call.
    Denied,
    /// The run was cancelled while the call was in flight.
    Cancelled,
    /// The tool ran and failed.
    Failed,
}

/// `call_merged`: a call repeated in one turn, not run again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = CallMergedData)]
pub struct CallMergedData {
    /// The call that was not run.
    pub call: ToolCallSchema,
    /// The id of the call whose result it shares.
    pub same_as: String,
}

/// `tools_added`: a meta tool added tools to the offered set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = ToolsAddedData)]
pub struct ToolsAddedData {
    /// The meta tool.
    pub by: String,
    /// The tools added.
    pub tools: Vec<String>,
}

/// `skills_added`: skills chosen for the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = SkillsAddedData)]
pub struct SkillsAddedData {
    /// Their names, best first.
    pub skills: Vec<String>,
}

/// `finished`, `failed`, `cancelled`, `interrupted`: how the run ended
/// (`toolbelt_host::runs::RunEnd`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = RunEnd)]
pub struct RunEndSchema {
    /// The run's status.
    pub status: RunStatusSchema,
    /// The answer, when it succeeded.
    pub answer: Option<String>,
    /// Why it did not.
    pub error: Option<String>,
    /// Tokens used.
    pub usage: UsageViewSchema,
}

#[cfg(test)]
mod tests;
