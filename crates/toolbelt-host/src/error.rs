//! [`HostError`]: why a stored agent could not be turned into a runnable one.

use toolbelt_store::StoreError;

/// Why the host could not find or build an agent. Front-ends map each variant to their own
/// answer (the server to one problem code per variant).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// No stored or configured agent has this name.
    #[error("no agent `{name}`")]
    AgentNotFound {
        /// The name asked for.
        name: String,
        /// Names that exist (at most 20), for a "did you mean".
        known: Vec<String>,
    },
    /// The agent's definition cannot be used as it is (a selection that does not parse, a
    /// router setting the runtime refuses, options the agent runtime rejects).
    #[error("agent `{agent}`: {field}: {reason}")]
    InvalidAgent {
        /// The agent.
        agent: String,
        /// The field, as a path into the agent's definition (`selection`, `router.max_tools`).
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// No usable model provider is configured for the agent.
    #[error("agent `{agent}` has no usable model provider")]
    Provider {
        /// The agent.
        agent: String,
        /// Why.
        #[source]
        source: toolbelt_llm::ProviderError,
    },
    /// The caller may not act on this agent (its access is limited to other agents).
    #[error(
        "this caller may not act on agent `{agent}`; it may act on: {}",
        list(allowed)
    )]
    AgentNotAllowed {
        /// The agent asked for.
        agent: String,
        /// The agents the caller may act on.
        allowed: Vec<String>,
    },
    /// The caller may not use this tool: none of the agents it may act on is offered it.
    #[error(
        "this caller may not use tool `{tool}`: none of its agents ({}) is offered it",
        list(allowed)
    )]
    ToolNotAllowed {
        /// The tool asked for.
        tool: String,
        /// The agents the caller may act on.
        allowed: Vec<String>,
    },
    /// The caller's access is limited to some agents and this acts on the whole server (tools,
    /// MCP servers, skills, settings, statistics).
    #[error(
        "this caller may act only on agents ({}), not on the whole server",
        list(allowed)
    )]
    ServerNotAllowed {
        /// The agents the caller may act on.
        allowed: Vec<String>,
    },
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

impl HostError {
    pub(crate) fn invalid(
        agent: impl Into<String>,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::InvalidAgent {
            agent: agent.into(),
            field: field.into(),
            reason: reason.into(),
        }
    }
}
