#![doc = include_str!("../README.md")]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod backoff;
mod call;
mod context;
pub mod duration_serde;
mod embedder;
mod error;
mod events;
mod executor;
mod name;
mod output;
mod progress;
mod registry;
mod schema;
mod selection;
mod snapshot;
mod spec;
mod suggest;
mod tool;
mod toolset;
mod validate;

pub use backoff::Backoff;
pub use call::{CallResult, ToolCall};
pub use context::{Extensions, ToolContext};
pub use embedder::{Embedder, EmbedderError};
pub use error::{RegistryError, SelectionError, SpecError, ToolError, ToolErrorKind, Violation};
pub use events::ExecEvent;
pub use executor::{
    ApprovalPolicy, ApprovalRequest, ApprovalResponse, Approver, BatchEvent, Decision, Executor,
    ExecutorBuilder,
};
pub use name::{MAX_NAME_LEN, MAX_PROVIDER_NAME_LEN, ToolName, is_provider_safe};
pub use output::{IntoToolOutput, Json, ToolOutput, Truncation};
pub use progress::{Progress, ProgressSink};
pub use registry::{Registry, discovered_tools};
pub use schema::schema_for;
pub use selection::Selection;
pub use snapshot::Snapshot;
pub use spec::{
    DEFAULT_MAX_OUTPUT_BYTES, Effect, Overflow, RetryPolicy, ToolKind, ToolPolicy, ToolSpec,
    ToolSpecBuilder,
};
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    BoxFuture, FnTool, FnToolBuilder, IntoToolHandle, Registration, Tool, ToolHandle, ToolModule,
    parse_args,
};
pub use toolset::Toolset;

/// Re-exports used by code that `#[tool]` generates. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Registry>();
    assert_send_sync::<Toolset>();
    assert_send_sync::<ToolHandle>();
    assert_send_sync::<Executor>();
    assert_send_sync::<ToolSpec>();
    assert_send_sync::<ToolError>();
};
