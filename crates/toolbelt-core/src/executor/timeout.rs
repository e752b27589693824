//! One attempt under a timeout, abandoned on cancellation.

use std::time::Duration;

use serde_json::Value;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::tool::ToolHandle;

pub(super) async fn run_once(
    tool: &ToolHandle,
    args: Value,
    ctx: ToolContext,
    timeout: Duration,
) -> Result<ToolOutput, ToolError> {
    let cancel = ctx.cancellation().clone();
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Cancelled),
        outcome = tokio::time::timeout(timeout, tool.call(args, ctx)) => {
            outcome.unwrap_or(Err(ToolError::Timeout { after: timeout }))
        }
    }
}
