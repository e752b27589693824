//! Agent runs that live in the host, not on the connection that started them (ADR 0064).
//!
//! A run is a task owned by the [`RunRegistry`]. Its events are appended to a history that
//! every subscriber replays from any point, so a client that connects late (or reconnects
//! after the last event it saw) sees everything. A disconnect cancels nothing; approvals and
//! questions are answered from any client; only [`RunRegistry::cancel`] stops a run.
//!
//! Everything here is plain serde: a front-end shows the views as they are, maps
//! [`RunError`] to its own answers (the server to one problem code per variant) and counts
//! what it wants through a [`RunObserver`].

mod cluster;
mod error;
mod events;
mod observer;
mod registry;
mod run;
mod waits;

pub use cluster::{Held, Holder};
pub use error::RunError;
pub use events::{
    ApprovalResolved, CallFailure, CallOutput, CallReport, PendingWaits, RunEnd, RunEvent,
    RunEventData, RunTranscript, Started, ToolProgress,
};
pub use observer::RunObserver;
pub use registry::{RunRegistry, RunStart, audit_entry};
pub use run::{RunDetail, RunEntry, RunStatus, RunView, UsageView};
pub use waits::{ApprovalView, QuestionView};
