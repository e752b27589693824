//! The tool file format (`toolbelt tools add -f`) and the checks the CLI runs before storing.
//!
//! Both live in the host ([`toolbelt_host::tool_file`]), which the server shares (its
//! `POST /api/v1/tools` takes this shape too); turning stored records into running things
//! (agents, their tools, the tool factories of a live registry) is the host's work as well.
//! Re-exported here under the names this module had before.

pub use toolbelt_host::tool_file::{
    AgentToolDef, ToolFile, check_agent_tool, from_yaml, update_tool,
};
pub use toolbelt_host::{
    AgentFactory, AgentToolFactory, BuiltAgent, ToolReport, agent_tool_parameters,
    declarative_factory, environment,
};
