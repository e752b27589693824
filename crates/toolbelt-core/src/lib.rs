//! The tool model of toolbelt: define a tool once, store it once, select views
//! of it by group, and execute calls safely.
//!
//! - [`ToolSpec`]: name, description, JSON Schema parameters, tags, timeout,
//!   retry, version, metadata, kind and a [`ToolPolicy`].
//! - [`Tool`]: the async trait a tool implements; [`FnTool`] wraps closures;
//!   `#[tool]` (crate `toolbelt-macros`) derives both from an async fn.
//! - [`Registry`]: every tool stored once, indexed by name and by tag, read
//!   without locks; [`Registry::select`] turns `"file,shell,-shell_exec"` into a
//!   [`Toolset`].
//! - [`Executor`]: validation, approval, timeout, retry, output limits, caching
//!   and events around each call; batches run concurrently in call order.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use serde_json::json;
//! use toolbelt_core::{Executor, FnTool, Registry, ToolCall, ToolContext};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! let registry = Registry::new();
//! registry.add_tool(FnTool::builder("add").description("Add two integers").tag("math")
//!     .typed(|x: Add, _ctx| async move { Ok::<_, toolbelt_core::ToolError>(x.a + x.b) })?)?;
//! let math = registry.select("math")?;
//! let result = Executor::new()
//!     .execute(&math, ToolCall::new("1", "add", json!({"a": 2, "b": 3})), &ToolContext::new())
//!     .await;
//! assert_eq!(result.outcome?.text, "5");
//! # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod call;
mod context;
mod error;
mod events;
mod executor;
mod name;
mod output;
mod registry;
mod schema;
mod selection;
mod snapshot;
mod spec;
mod suggest;
mod tool;
mod toolset;
mod validate;

pub use call::{CallResult, ToolCall};
pub use context::{Extensions, ToolContext};
pub use error::{RegistryError, SelectionError, SpecError, ToolError, ToolErrorKind, Violation};
pub use events::ExecEvent;
pub use executor::{
    ApprovalPolicy, ApprovalRequest, ApprovalResponse, Approver, Decision, Executor,
    ExecutorBuilder,
};
pub use name::{MAX_NAME_LEN, ToolName};
pub use output::{IntoToolOutput, Json, ToolOutput, Truncation};
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
