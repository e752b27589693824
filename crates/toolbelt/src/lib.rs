//! toolbelt: define a tool once, group it, bind groups to agents, route each
//! request to the few tools it needs, and execute calls safely.
//!
//! This facade re-exports the tool model of `toolbelt-core` at its root and
//! the other crates as modules.
//!
//! ```
//! use toolbelt::{FnTool, Registry};
//!
//! let registry = Registry::new();
//! registry.add_tool(FnTool::builder("ping").description("Answer pong").tag("net")
//!     .handler(|_args, _ctx| async { "pong" }).unwrap()).unwrap();
//! assert_eq!(registry.select("net").unwrap().names(), ["ping"]);
//! ```

pub use toolbelt_core::*;
pub use toolbelt_macros::tool;

/// Per-request tool routing (crate `toolbelt-router`).
pub mod router {
    pub use toolbelt_router::*;
}

/// Chat providers and tool-call parsing (crate `toolbelt-llm`).
pub mod llm {
    pub use toolbelt_llm::*;
}

/// The agent runtime (crate `toolbelt-agent`).
pub mod agent {
    pub use toolbelt_agent::*;
}

/// Built-in tools (crate `toolbelt-tools`).
pub mod tools {
    pub use toolbelt_tools::*;
}

/// SQLite/Postgres persistence: tools with versions, agents, bindings, live sync (crate `toolbelt-store`).
pub mod store {
    pub use toolbelt_store::*;
}

pub mod stored;

/// Turning stored records into running things: agents, their tools, the live registry
/// (crate `toolbelt-host`).
pub mod host {
    pub use toolbelt_host::*;
}

/// MCP both ways (crate `toolbelt-mcp`).
pub mod mcp {
    pub use toolbelt_mcp::*;
}

/// The repository README's code blocks, compiled and run as doc tests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
