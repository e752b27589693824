//! [`ExecEvent`]: what the executor reports while it runs calls.

use std::time::Duration;

use serde::Serialize;

use crate::error::ToolErrorKind;

/// One step of a call's life, sent to every subscriber of the executor.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExecEvent {
    /// The executor picked up the call.
    CallStarted {
        /// The call id.
        call_id: String,
        /// The tool name.
        tool: String,
    },
    /// The call needs a decision from the approver.
    ApprovalRequested {
        /// The call id.
        call_id: String,
        /// The tool name.
        tool: String,
    },
    /// A failed attempt will be retried after `delay`.
    Retrying {
        /// The call id.
        call_id: String,
        /// The tool name.
        tool: String,
        /// The attempt that failed (1-based).
        attempt: u32,
        /// The wait before the next attempt.
        delay: Duration,
    },
    /// The running call reported progress ([`ToolContext::report_progress`](crate::ToolContext::report_progress)).
    Progress(crate::Progress),
    /// The call ended.
    CallFinished {
        /// The call id.
        call_id: String,
        /// The tool name.
        tool: String,
        /// Wall time, retries included.
        duration: Duration,
        /// `None` on success, else the error category.
        error: Option<ToolErrorKind>,
        /// Whether the result came from the cache.
        cached: bool,
    },
}
