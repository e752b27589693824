#![doc = include_str!("../README.md")]
#![deny(clippy::print_stdout, clippy::print_stderr)]

#[cfg(feature = "server")]
mod agents;
#[cfg(feature = "client")]
mod client;
mod config;
mod convert;
mod error;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "server")]
mod sessions;

#[cfg(feature = "server")]
pub use agents::{AgentEndpoint, Export, agents_router, agents_router_with_limit};
#[cfg(feature = "client")]
pub use client::{
    McpClient, McpClientBuilder, McpEvent, McpTool, RECONNECT_BACKOFF, ServerStatus, SpawnRefused,
    StdioCommand, StdioProcess, StdioSpawner,
};
pub use config::{McpConfig, McpSandbox, McpServerConfig, Transport};
pub use convert::{
    MCP_METADATA_KEY, annotations_from_policy, output_from_result, policy_from_annotations,
    result_from_outcome, tool_definition,
};
pub use error::McpError;
#[cfg(feature = "server")]
pub use server::{McpServer, McpServerHandler};
/// How the client waits before reconnecting: core's one backoff type, re-exported here where
/// it used to live.
#[cfg(feature = "client")]
pub use toolbelt_core::Backoff;
/// Progress of imported calls reaches a [`ProgressSink`] in the call's context (and the
/// executor's events); it is core's type, re-exported here where it used to live.
pub use toolbelt_core::{Progress, ProgressSink};

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    #[cfg(feature = "client")]
    assert_send_sync::<McpClient>();
    assert_send_sync::<McpError>();
    #[cfg(feature = "server")]
    assert_send_sync::<McpServer>();
};
