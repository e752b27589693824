//! [`AgentError`] and [`BuildError`]: why a run or an agent definition failed.

use std::time::Duration;

use toolbelt_core::SpecError;
use toolbelt_llm::ProviderError;

use crate::transcript::Transcript;

/// Why a run ended without an answer.
///
/// Every variant keeps the transcript up to the point the run stopped, so a
/// host can show, store or continue what happened. Tool failures are not
/// here: they go back to the model as tool results.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model kept calling tools until the iteration limit.
    #[error("agent `{agent}` reached its limit of {limit} model calls without a final answer")]
    MaxIterations {
        /// The agent's name.
        agent: String,
        /// The limit that was reached.
        limit: u32,
        /// What happened until then.
        transcript: Box<Transcript>,
    },
    /// The provider failed (network, API error, bad answer).
    #[error("agent `{agent}`: the model provider failed")]
    Provider {
        /// The agent's name.
        agent: String,
        /// The provider's error.
        #[source]
        source: ProviderError,
        /// What happened until then.
        transcript: Box<Transcript>,
    },
    /// The run took longer than its timeout.
    #[error("agent `{agent}` timed out after {}", humanize(*.after))]
    Timeout {
        /// The agent's name.
        agent: String,
        /// The timeout that elapsed.
        after: Duration,
        /// What happened until then.
        transcript: Box<Transcript>,
    },
    /// The model's answer was empty or held a call that could not be run,
    /// also after a corrective turn told it what was wrong.
    #[error("agent `{agent}`: the model gave no usable answer: {reason}")]
    BadAnswer {
        /// The agent's name.
        agent: String,
        /// What was wrong with the last answer.
        reason: String,
        /// What happened until then.
        transcript: Box<Transcript>,
    },
    /// The model kept repeating one call after being told it would not run again.
    #[error(
        "agent `{agent}` stopped a loop: the model asked for the same `{tool}` call (same arguments) {times} times"
    )]
    Loop {
        /// The agent's name.
        agent: String,
        /// The tool it kept calling.
        tool: String,
        /// How many times it asked for that call.
        times: u32,
        /// What happened until then.
        transcript: Box<Transcript>,
    },
    /// The run would exceed its budget of tool calls.
    #[error("agent `{agent}` reached its limit of {limit} tool calls without a final answer")]
    ToolCallLimit {
        /// The agent's name.
        agent: String,
        /// The limit.
        limit: u32,
        /// What happened until then.
        transcript: Box<Transcript>,
    },
    /// The model's final answer described a call of an offered tool instead
    /// of making it ("I will use `file_read` to …"), also after a corrective
    /// turn told it to call the tool.
    #[error(
        "agent `{agent}`: the model described a `{tool}` call instead of making it, also after being told to call it"
    )]
    NarratedCall {
        /// The agent's name.
        agent: String,
        /// The tool it described calling.
        tool: String,
        /// What happened until then.
        transcript: Box<Transcript>,
    },
    /// The run's cancellation token was cancelled.
    #[error("agent `{agent}` was cancelled")]
    Cancelled {
        /// The agent's name.
        agent: String,
        /// What happened until then.
        transcript: Box<Transcript>,
    },
}

impl AgentError {
    /// The transcript up to the point the run stopped.
    pub fn transcript(&self) -> &Transcript {
        match self {
            Self::MaxIterations { transcript, .. }
            | Self::Provider { transcript, .. }
            | Self::Timeout { transcript, .. }
            | Self::BadAnswer { transcript, .. }
            | Self::Loop { transcript, .. }
            | Self::ToolCallLimit { transcript, .. }
            | Self::NarratedCall { transcript, .. }
            | Self::Cancelled { transcript, .. } => transcript,
        }
    }

    /// Takes the transcript out of the error.
    pub fn into_transcript(self) -> Transcript {
        match self {
            Self::MaxIterations { transcript, .. }
            | Self::Provider { transcript, .. }
            | Self::Timeout { transcript, .. }
            | Self::BadAnswer { transcript, .. }
            | Self::Loop { transcript, .. }
            | Self::ToolCallLimit { transcript, .. }
            | Self::NarratedCall { transcript, .. }
            | Self::Cancelled { transcript, .. } => *transcript,
        }
    }
}

/// Why [`AgentBuilder::build`](crate::AgentBuilder::build) refused a definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// `max_iterations(0)` leaves no room for a single model call.
    #[error("max_iterations must be at least 1")]
    ZeroIterations,
    /// `ToolChoice::Tool(name)` names a tool the agent does not have.
    #[error("tool_choice names `{name}`, which is not in the agent's toolset; tools: {}", list(.available))]
    UnknownToolChoice {
        /// The tool named by the choice.
        name: String,
        /// The tools the agent has, sorted.
        available: Vec<String>,
    },
    /// `pin(name)` names a tool the agent does not have.
    #[error("pinned tool `{name}` is not in the agent's toolset; tools: {}", list(.available))]
    UnknownPinned {
        /// The pinned name.
        name: String,
        /// The tools the agent has, sorted.
        available: Vec<String>,
    },
    /// The agent's name is not a valid tool name (it is its name as a tool).
    #[error("invalid agent name `{name}`; it must be a valid tool name")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Why it was rejected.
        #[source]
        source: SpecError,
    },
    /// A tool given with `.tool(..)` has an invalid spec.
    #[error("invalid tool given to the agent")]
    Tool(#[from] SpecError),
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_owned()
    } else {
        names.join(", ")
    }
}

pub(crate) fn humanize(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}
