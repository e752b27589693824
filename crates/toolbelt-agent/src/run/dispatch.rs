//! Running one turn's tool calls through the executor, concurrently where allowed.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;

use tokio::task::{Id, JoinSet};
use toolbelt_core::{CallResult, Executor, ToolCall, ToolContext, Toolset};

use crate::event::{AgentEvent, EventSink, emit};

/// What became of one call.
pub(crate) enum Dispatched {
    /// The executor returned (the outcome may be a tool error for the model).
    Done(CallResult),
    /// The call's task panicked.
    Panicked(ToolCall),
}

/// Runs `calls` and returns what became of each, in call order.
///
/// Consecutive calls of tools that allow it run at once; any other call runs
/// alone, after the calls before it. Concurrent calls are tasks of a
/// `JoinSet`; a call alone runs inline. Either way a tool that panics fails
/// its call, not the run, and dropping this future aborts the calls.
pub(crate) async fn run(
    executor: &Executor,
    tools: &Toolset,
    calls: Vec<ToolCall>,
    ctx: &ToolContext,
    parallel: bool,
    sink: Option<&EventSink>,
) -> Vec<Dispatched> {
    let tools = Arc::new(tools.clone());
    let mut turn = Turn {
        executor,
        tools,
        ctx,
        sink,
        slots: (0..calls.len()).map(|_| None).collect(),
    };
    let mut group = Vec::new();
    for (index, call) in calls.into_iter().enumerate() {
        let concurrent = parallel
            && turn
                .tools
                .get(&call.name)
                .is_none_or(|t| t.spec().policy.parallel);
        if concurrent {
            group.push((index, call));
        } else {
            turn.run_group(std::mem::take(&mut group)).await;
            turn.run_group(vec![(index, call)]).await;
        }
    }
    turn.run_group(group).await;
    turn.slots.into_iter().flatten().collect()
}

struct Turn<'a> {
    executor: &'a Executor,
    tools: Arc<Toolset>,
    ctx: &'a ToolContext,
    sink: Option<&'a EventSink>,
    slots: Vec<Option<Dispatched>>,
}

impl Turn<'_> {
    /// A call alone runs on the run's own task: no spawn, no thread hop.
    async fn run_alone(&mut self, index: usize, call: ToolCall) {
        emit(self.sink, || AgentEvent::ToolCallStarted(call.clone()));
        let kept = call.clone();
        let run = self.executor.execute(&self.tools, call, self.ctx);
        self.slots[index] = Some(match AssertUnwindSafe(run).catch_unwind().await {
            Ok(result) => {
                emit(self.sink, || AgentEvent::ToolCallFinished(result.clone()));
                Dispatched::Done(result)
            }
            Err(_) => {
                tracing::error!(tool = %kept.name, call_id = %kept.id, "tool call panicked");
                Dispatched::Panicked(kept)
            }
        });
    }

    async fn run_group(&mut self, mut group: Vec<(usize, ToolCall)>) {
        if group.len() <= 1 {
            if let Some((index, call)) = group.pop() {
                self.run_alone(index, call).await;
            }
            return;
        }
        let mut set = JoinSet::new();
        let mut started: Vec<(Id, usize, ToolCall)> = Vec::with_capacity(group.len());
        for (index, call) in group {
            emit(self.sink, || AgentEvent::ToolCallStarted(call.clone()));
            let executor = self.executor.clone();
            let tools = Arc::clone(&self.tools);
            let ctx = self.ctx.clone();
            let kept = call.clone();
            let handle = set.spawn(async move { executor.execute(&tools, call, &ctx).await });
            started.push((handle.id(), index, kept));
        }
        while let Some(joined) = set.join_next_with_id().await {
            let id = match &joined {
                Ok((id, _)) => *id,
                Err(e) => e.id(),
            };
            let Some(pos) = started.iter().position(|(task, ..)| *task == id) else {
                continue;
            };
            let (_, index, call) = started.swap_remove(pos);
            self.slots[index] = Some(match joined {
                Ok((_, result)) => {
                    emit(self.sink, || AgentEvent::ToolCallFinished(result.clone()));
                    Dispatched::Done(result)
                }
                Err(e) => {
                    tracing::error!(tool = %call.name, call_id = %call.id, error = %e, "tool call task failed");
                    Dispatched::Panicked(call)
                }
            });
        }
    }
}
