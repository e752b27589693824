#![doc = include_str!("../README.md")]

mod access;
mod agents;
mod database;
mod environment;
mod error;
mod factories;
mod host;
mod learning;
pub mod mcp_servers;
mod origin;
pub mod paths;
mod provider;
mod router;
pub mod routines;
pub mod runs;
mod skills;
pub mod tool_file;

pub use access::AgentAccess;
pub use agents::{AgentFactory, AgentFactoryBuilder, BuiltAgent, EncoderRole, ToolReport};
pub use database::{Database, POLL_INTERVAL, load, open, open_store};
pub use environment::environment;
pub use error::HostError;
pub use factories::{AgentToolFactory, agent_tool_parameters, declarative_factory};
pub use host::{EncoderLoad, Host, HostBuilder, LearnSettings};
pub use learning::StoreRunLog;
pub use mcp_servers::{McpServers, McpSupervision};
pub use origin::tool_origin;
pub use provider::{ProviderFor, provider_config, provider_config_from};
pub use router::{RERANK_MAX_TOKENS, WORKSPACE_TOOLS, for_profile, router_for};
pub use skills::skill_of;

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<AgentFactory>();
    assert_send_sync::<Host>();
    assert_send_sync::<AgentToolFactory>();
    assert_send_sync::<runs::RunRegistry>();
};
