//! [`Transcript`], [`Step`] and [`RunOutput`]: the record of a run.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use toolbelt_core::{CallResult, ToolCall};
use toolbelt_llm::{FinishReason, Message, Usage};
use toolbelt_router::RouteDecision;

/// Everything a run did, in order: what the model saw, asked and got back.
///
/// Serialisable as the JSON a server or a console shows (durations in milliseconds,
/// steps tagged by `type`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Transcript {
    /// The run's id (a UUID v7): unique across runs and processes; approval
    /// prompts are scoped by it ([`ApprovalPrompt::id`](crate::ApprovalPrompt::id)).
    pub run_id: String,
    /// The conversation as the model saw it last, without the system prompt:
    /// earlier turns (see [`Transcript::history_len`]), the input, the
    /// model's answers and the tool results.
    pub messages: Vec<Message>,
    /// How many of `messages` came from earlier runs.
    pub history_len: usize,
    /// The steps of this run, in order.
    pub steps: Vec<Step>,
    /// Tokens used by this run's model calls.
    pub usage: Usage,
}

impl Transcript {
    /// The messages this run added (input, answers, tool results).
    pub fn new_messages(&self) -> &[Message] {
        &self.messages[self.history_len.min(self.messages.len())..]
    }

    /// How many model calls the run made.
    pub fn model_calls(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Model { .. }))
            .count()
    }

    /// The results of every tool call of the run, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &CallResult> + '_ {
        self.steps.iter().filter_map(|s| match s {
            Step::Tool { result } => Some(result),
            _ => None,
        })
    }

    /// The router's decision for this run, if a router was used.
    pub fn route(&self) -> Option<&RouteDecision> {
        self.steps.iter().find_map(|s| match s {
            Step::Routed { decision } => Some(decision),
            _ => None,
        })
    }

    /// Answers tool calls that never got a result (the run stopped in
    /// between), so the conversation is valid to send to a model again.
    pub(crate) fn close_open_calls(&mut self, reason: &str) {
        let mut open: Vec<ToolCall> = Vec::new();
        for message in &self.messages[self.history_len.min(self.messages.len())..] {
            match message {
                Message::Assistant { tool_calls, .. } => open.extend(tool_calls.iter().cloned()),
                Message::Tool { call_id, .. } => open.retain(|c| &c.id != call_id),
                _ => {}
            }
        }
        for call in open {
            self.messages.push(Message::tool_result(
                call.id,
                call.name,
                format!("error: not run: {reason}"),
                true,
            ));
        }
    }
}

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Step {
    /// The router chose the tools for this run.
    Routed {
        /// The router's decision.
        decision: RouteDecision,
    },
    /// The model answered once.
    Model {
        /// 1-based number of the model call in this run.
        iteration: u32,
        /// The tools offered in the request.
        tools_offered: Vec<String>,
        /// The text of the answer.
        content: Option<String>,
        /// The tool calls it asked for (native or parsed from text).
        tool_calls: Vec<ToolCall>,
        /// Why it stopped.
        finish_reason: FinishReason,
        /// Tokens used.
        usage: Usage,
        /// Wall time of the model call.
        #[serde(rename = "duration_ms", with = "toolbelt_core::duration_serde::millis")]
        duration: Duration,
    },
    /// A tool call ended (successfully or with an error the model sees).
    Tool {
        /// The executor's result.
        result: CallResult,
    },
    /// A call was not run because it repeated an earlier identical call too often.
    Blocked {
        /// The call.
        call: ToolCall,
        /// What the model was told.
        reason: String,
    },
    /// A call equal to an earlier one of the same turn (same tool, equal
    /// arguments) was not run; the model got that call's result for it.
    Merged {
        /// The call.
        call: ToolCall,
        /// The id of the identical call whose result it shares.
        same_as: String,
    },
    /// The model's answer was empty or unreadable, or narrated a tool call
    /// instead of making it; it was told what was wrong.
    Corrected {
        /// What was wrong (also what the model was told).
        reason: String,
    },
    /// A meta tool (`search_tools`) found tools that join the offered set.
    ToolsAdded {
        /// The meta tool that found them.
        by: String,
        /// The tools added.
        tools: Vec<String>,
    },
    /// Skills were chosen for the run: their instructions join the system message of
    /// every model request from here on.
    SkillsAdded {
        /// The skills' names, best first.
        skills: Vec<String>,
    },
}

/// What kind of answer a run ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AnswerKind {
    /// The model's final answer.
    Final,
    /// The router found the request ambiguous: the answer is a question for the user.
    Clarification,
    /// The answer was cut at the output budget (`max_tokens`): it is incomplete.
    Truncated,
}

/// A finished run: the answer and how it was reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunOutput {
    /// The answer text (empty if the model gave none).
    pub answer: String,
    /// Whether it is an answer or a clarifying question.
    pub kind: AnswerKind,
    /// The record of the run.
    pub transcript: Transcript,
}

impl RunOutput {
    /// Tokens used by the run.
    pub fn usage(&self) -> Usage {
        self.transcript.usage
    }

    /// Whether the answer was cut at the output budget.
    pub fn is_truncated(&self) -> bool {
        self.kind == AnswerKind::Truncated
    }

    /// Whether the answer is a clarifying question rather than an answer.
    pub fn is_clarification(&self) -> bool {
        self.kind == AnswerKind::Clarification
    }
}
