//! Running one turn's tool calls through the executor, reporting each as it goes.

use toolbelt_core::{BatchEvent, CallResult, Executor, ToolCall, ToolContext, Toolset};

use crate::event::{AgentEvent, EventSink, emit};

/// Runs `calls` and returns their results in call order.
///
/// The executor schedules them (consecutive parallel-safe calls at once, any
/// other call alone; all alone when `parallel` is off), contains panics, and
/// aborts the calls when this future is dropped. Each start and finish is
/// streamed to `sink` the moment it happens.
pub(crate) async fn run(
    executor: &Executor,
    tools: &Toolset,
    calls: Vec<ToolCall>,
    ctx: &ToolContext,
    parallel: bool,
    sink: Option<&EventSink>,
) -> Vec<CallResult> {
    executor
        .execute_batch_with(tools, calls, ctx, parallel, |event| match event {
            BatchEvent::Started(call) => emit(sink, || AgentEvent::ToolCallStarted(call.clone())),
            BatchEvent::Finished(result) => {
                emit(sink, || AgentEvent::ToolCallFinished(result.clone()));
            }
            _ => {}
        })
        .await
}
