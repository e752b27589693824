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
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
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
