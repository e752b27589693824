//! [`Progress`]: how far a running call has got, reported by the tool (an MCP server's
//! `notifications/progress`, a long download) and delivered to the executor's events and to
//! any [`ProgressSink`] the host put in the call's context.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

/// One progress report of a running call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Progress {
    /// The call.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Work done so far (grows with each report).
    pub progress: f64,
    /// Total work, when known.
    pub total: Option<f64>,
    /// What is happening now, when the tool says.
    pub message: Option<String>,
}

type ProgressFn = dyn Fn(&Progress) + Send + Sync;

/// A callback a host puts in a call's [`ToolContext`](crate::ToolContext) (`ctx.with(sink)`)
/// to receive the progress of its calls, each report naming its call and tool.
#[derive(Clone)]
pub struct ProgressSink(Arc<ProgressFn>);

impl ProgressSink {
    /// A sink calling `f`.
    pub fn new(f: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Delivers one report.
    pub fn send(&self, progress: &Progress) {
        (self.0)(progress);
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// What the executor puts in a running call's context: who the reports are for.
#[derive(Clone)]
pub(crate) struct CallProgress {
    pub(crate) call_id: String,
    pub(crate) tool: String,
    pub(crate) deliver: Arc<ProgressFn>,
}
