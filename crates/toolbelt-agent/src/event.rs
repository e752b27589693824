//! [`AgentEvent`]: what a streamed run reports as it goes.

use tokio::sync::mpsc;
use toolbelt_core::{CallResult, Progress, ToolCall};
use toolbelt_router::RouteDecision;

use crate::approval::ApprovalPrompt;
use crate::error::AgentError;
use crate::transcript::RunOutput;

/// One event of a streamed run; the last one is [`AgentEvent::Finished`] or [`AgentEvent::Failed`].
#[derive(Debug)]
#[non_exhaustive]
pub enum AgentEvent {
    /// The router chose the tools for this run.
    Routed(RouteDecision),
    /// More text of the model's answer.
    TextDelta(String),
    /// The model answered once; `tool_calls` will run next.
    ModelTurn {
        /// 1-based number of the model call.
        iteration: u32,
        /// The tool calls it asked for.
        tool_calls: Vec<ToolCall>,
    },
    /// A tool call started executing.
    ToolCallStarted(ToolCall),
    /// A call waits for a decision; answer through [`ApprovalPrompt`].
    ///
    /// The run is paused on this call until the prompt is answered or
    /// dropped (dropping rejects the call).
    ApprovalRequested(ApprovalPrompt),
    /// A running tool call reported progress (an MCP server's `notifications/progress`, ...).
    ToolProgress(Progress),
    /// A tool call ended; an error in it is what the model will see.
    ToolCallFinished(CallResult),
    /// A call equal to an earlier one of the same turn (same tool, equal
    /// arguments) was not run: it gets that call's result.
    CallMerged {
        /// The call that was not run.
        call: ToolCall,
        /// The id of the identical call whose result it shares.
        same_as: String,
    },
    /// A meta tool (`search_tools`) added tools to the offered set.
    ToolsAdded {
        /// The meta tool.
        by: String,
        /// The tools added.
        tools: Vec<String>,
    },
    /// Skills were chosen for this run: their instructions are added to its model requests.
    SkillsAdded {
        /// The skills' names, best first.
        skills: Vec<String>,
    },
    /// The run ended with an answer.
    Finished(Box<RunOutput>),
    /// The run ended without an answer.
    Failed(AgentError),
}

/// Where a streamed run sends its events; absent for [`Agent::run`](crate::Agent::run).
#[derive(Debug, Clone)]
pub(crate) struct EventSink {
    tx: mpsc::UnboundedSender<AgentEvent>,
}

impl EventSink {
    pub(crate) fn channel() -> (Self, mpsc::UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }

    /// Sends `event`; false when nobody listens any more.
    pub(crate) fn send(&self, event: AgentEvent) -> bool {
        self.tx.send(event).is_ok()
    }
}

/// Sends an event when the run streams; builds nothing otherwise.
pub(crate) fn emit(sink: Option<&EventSink>, event: impl FnOnce() -> AgentEvent) {
    if let Some(sink) = sink {
        sink.send(event());
    }
}
