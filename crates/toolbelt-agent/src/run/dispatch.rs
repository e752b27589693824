//! Running one turn's tool calls through the executor, reporting each as it goes.

use toolbelt_core::{
    BatchEvent, CallResult, Executor, ProgressSink, ToolCall, ToolContext, Toolset,
};

use crate::event::{AgentEvent, EventSink, emit};

/// Runs `calls` and returns their results in call order.
///
/// The executor schedules them (consecutive parallel-safe calls at once, any
/// other call alone; all alone when `parallel` is off), contains panics, and
/// aborts the calls when this future is dropped. Each start, progress report and finish is
/// streamed to `sink` the moment it happens (a [`ProgressSink`] the host put in `ctx` still
/// gets the reports too).
pub(crate) async fn run(
    executor: &Executor,
    tools: &Toolset,
    calls: Vec<ToolCall>,
    ctx: &ToolContext,
    parallel: bool,
    sink: Option<&EventSink>,
) -> Vec<CallResult> {
    let progress_ctx;
    let ctx = match sink {
        Some(events) => {
            let events = events.clone();
            let host = ctx.get::<ProgressSink>().cloned();
            progress_ctx = ctx.clone().with(ProgressSink::new(move |progress| {
                if let Some(host) = &host {
                    host.send(progress);
                }
                emit(Some(&events), || AgentEvent::ToolProgress(progress.clone()));
            }));
            &progress_ctx
        }
        None => ctx,
    };
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
