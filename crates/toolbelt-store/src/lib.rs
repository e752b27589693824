#![doc = include_str!("../README.md")]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod agents;
mod availability;
mod changes;
mod clock;
mod error;
mod live;
mod mcp_servers;
mod memory;
mod revision;
mod routine_claims;
mod routines;
mod run_log;
mod runs;
mod skills;
mod store;
mod stored;
mod sync;
mod tokens;
mod tools;
mod verdict;

pub use agents::{AgentSettings, AgentSpec, Agents, Binding, RouterSettings, split_pin};
pub use availability::{Availability, Condition};
pub use changes::{Change, Changes};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{Entity, Result, StoreError};
pub use live::{LiveRegistry, LiveRegistryBuilder, Reconciled, ToolFactory, WatchHandle};
pub use mcp_servers::{McpServerRecord, McpServers};
pub use memory::StoreMemory;
pub use revision::Revision;
pub use routine_claims::{ClaimConfig, JobOutcome, RoutineClaims, RoutineJob};
pub use routines::{RoutineRun, StoreRoutines};
pub use run_log::{
    AgentTokens, LogEntry, LogFilter, LogKind, LogRecord, RunLog, RunLogClosed, RunLogConfig,
    RunLogTask, RunLogWriter, ToolCallBucket, ToolUse, redact,
};
pub use runs::{RunRecord, RunStatus, RunUpdate, Runs};
pub use skills::{SkillChange, SkillSpec, Skills};
pub use store::{Engine, SCHEMA_VERSION, Store, StoreOptions, redacted_url};
pub use stored::Stored;
pub use sync::SyncReport;
pub use tokens::{TokenRecord, Tokens, token_hash};
pub use tools::{ToolDef, ToolEntry, ToolSource, ToolState, ToolVersion, Tools, spec_hash};
pub use verdict::{Environment, Reason, Verdict, availability, selection_includes};

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Store>();
    assert_send_sync::<StoreError>();
};
