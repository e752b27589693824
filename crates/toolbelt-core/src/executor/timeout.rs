//! One attempt under a timeout, abandoned on cancellation, with panics contained.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
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
    // A panicking tool fails its own call; it must not take down the batch or the run.
    let call = AssertUnwindSafe(tool.call(args, ctx)).catch_unwind();
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Cancelled),
        outcome = tokio::time::timeout(timeout, call) => match outcome {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => Err(ToolError::failed(format!(
                "the tool crashed ({}); this is a bug in the tool, not in the call",
                panic_message(panic.as_ref())
            ))),
            Err(_) => Err(ToolError::Timeout { after: timeout }),
        },
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("panic")
}
