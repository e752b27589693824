//! Attempts of one call: timeout each attempt, retry retryable failures with backoff.

use std::time::Duration;

use serde_json::Value;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::events::ExecEvent;
use crate::output::ToolOutput;
use crate::tool::ToolHandle;

use super::Shared;

/// Runs `tool` until it succeeds, fails for good, or retries run out.
/// Returns the outcome and the number of attempts made.
pub(super) async fn run_attempts(
    shared: &Shared,
    tool: &ToolHandle,
    args: &Value,
    ctx: &ToolContext,
) -> (Result<ToolOutput, ToolError>, u32) {
    let spec = tool.spec();
    let timeout = spec.timeout.unwrap_or(shared.default_timeout);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let outcome = super::timeout::run_once(tool, args.clone(), ctx.clone(), timeout).await;
        // A timed-out attempt of a mutating tool may have done its work: running
        // it again is safe only for tools that say so.
        let may_repeat = |err: &ToolError| {
            !matches!(err, ToolError::Timeout { .. })
                || spec.policy.is_read_only()
                || spec.policy.idempotent
        };
        match outcome {
            Err(err)
                if err.is_retryable() && may_repeat(&err) && attempt <= spec.retry.max_retries =>
            {
                let delay = spec.retry.backoff(attempt);
                tracing::debug!(tool = %spec.name, attempt, ?delay, error = %err, "retrying");
                shared.emit(|| ExecEvent::Retrying {
                    call_id: ctx.call_id().unwrap_or_default().to_owned(),
                    tool: spec.name.to_string(),
                    attempt,
                    delay,
                });
                if sleep_or_cancel(delay, ctx).await.is_err() {
                    return (Err(ToolError::Cancelled), attempt);
                }
            }
            other => return (other, attempt),
        }
    }
}

async fn sleep_or_cancel(delay: Duration, ctx: &ToolContext) -> Result<(), ToolError> {
    tokio::select! {
        () = tokio::time::sleep(delay) => Ok(()),
        () = ctx.cancellation().cancelled() => Err(ToolError::Cancelled),
    }
}
