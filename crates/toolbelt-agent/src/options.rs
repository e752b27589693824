//! [`AgentOptions`] (fixed per agent) and [`RunOptions`] (per run).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toolbelt_core::{Approver, CancellationToken, Extensions};
use toolbelt_llm::{Message, ModelProfile, ToolChoice};

/// How an agent runs; set through [`AgentBuilder`](crate::AgentBuilder).
///
/// Serialisable (durations in milliseconds, e.g. `run_timeout_ms`), so a host can store or
/// show the options an agent runs with; missing fields take their defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct AgentOptions {
    /// Instructions sent first in every request.
    pub system_prompt: Option<String>,
    /// Most model calls per run (default 10).
    pub max_iterations: u32,
    /// Whether and which tools the model must call (default auto).
    pub tool_choice: ToolChoice,
    /// Whether a forcing `tool_choice` applies only to the first model call
    /// of a run (default true), so a forced call cannot loop forever.
    pub reset_tool_choice: bool,
    /// Whether the model may ask for several calls per turn, run concurrently (default true).
    pub parallel_tool_calls: bool,
    /// Limit on a whole run (default none).
    #[serde(
        rename = "run_timeout_ms",
        with = "toolbelt_core::duration_serde::opt_millis"
    )]
    pub run_timeout: Option<Duration>,
    /// Model id; `None` uses the provider's configured model.
    pub model: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Sampling seed (for repeatable runs on servers that honour it).
    pub seed: Option<u64>,
    /// Most tokens per answer, sent as the provider's `max_tokens` field
    /// (`None`: the model profile's default).
    pub max_tokens: Option<u32>,
    /// Whether tool calls written as text are parsed and executed (`None`:
    /// as the model profile says; on only for models that write calls as
    /// text). Only calls naming a tool offered in that turn count.
    pub text_tool_calls: Option<bool>,
    /// How many times one call (same tool, same arguments) may run in a run
    /// (default 2). A further identical call is not run: the model is told,
    /// and if it repeats a blocked call again the run stops with
    /// [`AgentError::Loop`](crate::AgentError::Loop).
    pub max_identical_calls: u32,
    /// Most tool calls in one run (default 50); a turn that would exceed it
    /// is not run and the run stops with
    /// [`AgentError::ToolCallLimit`](crate::AgentError::ToolCallLimit).
    pub max_tool_calls: u32,
    /// How many corrective turns in a row an empty answer or an unreadable
    /// call gets before the run fails with
    /// [`AgentError::BadAnswer`](crate::AgentError::BadAnswer) (default 1).
    pub corrective_turns: u32,
    /// Whether streamed runs ask the provider for a stream (default true).
    /// Off, each answer is fetched whole and sent as one text event. A run
    /// also switches to whole answers by itself when a stream fails in a way
    /// a plain request may not ([`ProviderError::suggests_no_stream`](toolbelt_llm::ProviderError::suggests_no_stream)).
    pub stream: bool,
    /// The model's profile (`None`: looked up in
    /// [`ModelProfiles::builtin`](toolbelt_llm::ModelProfiles::builtin) by the
    /// model id when the agent is built).
    pub profile: Option<ModelProfile>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            system_prompt: None,
            max_iterations: 10,
            tool_choice: ToolChoice::Auto,
            reset_tool_choice: true,
            parallel_tool_calls: true,
            run_timeout: None,
            model: None,
            temperature: None,
            seed: None,
            max_tokens: None,
            text_tool_calls: None,
            max_identical_calls: 2,
            max_tool_calls: 50,
            corrective_turns: 1,
            stream: true,
            profile: None,
        }
    }
}

/// Settings for one run: cancellation, limits, context for the tools.
///
/// ```
/// use std::time::Duration;
/// use toolbelt_agent::RunOptions;
/// use toolbelt_core::CancellationToken;
///
/// let cancel = CancellationToken::new();
/// let opts = RunOptions::new().with_cancellation(cancel.clone()).with_timeout(Duration::from_secs(30));
/// # let _ = opts;
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RunOptions {
    pub(crate) cancel: Option<CancellationToken>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_iterations: Option<u32>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) history: Vec<Message>,
    pub(crate) extensions: Extensions,
    pub(crate) depth: u32,
    pub(crate) conversation_id: Option<String>,
    pub(crate) approver: Option<Arc<dyn Approver>>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("timeout", &self.timeout)
            .field("max_iterations", &self.max_iterations)
            .field("max_tokens", &self.max_tokens)
            .field("history", &self.history.len())
            .field("depth", &self.depth)
            .field("conversation_id", &self.conversation_id)
            .field("approver", &self.approver.is_some())
            .finish_non_exhaustive()
    }
}

impl RunOptions {
    /// Defaults: no cancellation, the agent's limits, no history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancelling `token` ends the run with [`AgentError::Cancelled`](crate::AgentError::Cancelled)
    /// and cancels its tool calls in flight.
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Overrides the agent's run timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Overrides the agent's iteration limit (at least 1).
    #[must_use]
    pub fn with_max_iterations(mut self, limit: u32) -> Self {
        self.max_iterations = Some(limit.max(1));
        self
    }

    /// Overrides the agent's output budget per answer (at least 1).
    #[must_use]
    pub fn with_max_tokens(mut self, limit: u32) -> Self {
        self.max_tokens = Some(limit.max(1));
        self
    }

    /// Earlier messages of the conversation (without a system prompt).
    #[must_use]
    pub fn with_history(mut self, messages: Vec<Message>) -> Self {
        self.history = messages;
        self
    }

    /// Values the tools find in their [`ToolContext`](toolbelt_core::ToolContext).
    #[must_use]
    pub fn with_extensions(mut self, extensions: Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// How deep in agents-as-tools this run is (set by [`AgentTool`](crate::AgentTool)).
    #[must_use]
    pub fn with_depth(mut self, depth: u32) -> Self {
        self.depth = depth;
        self
    }

    /// The conversation id the tools see (a fresh one is made otherwise).
    #[must_use]
    pub fn with_conversation_id(mut self, id: impl Into<String>) -> Self {
        self.conversation_id = Some(id.into());
        self
    }

    /// Who answers approval requests in this run, instead of the executor's approver.
    ///
    /// A streamed run answers them through [`AgentEvent::ApprovalRequested`](crate::AgentEvent::ApprovalRequested)
    /// and ignores this.
    #[must_use]
    pub fn with_approver(mut self, approver: impl Approver) -> Self {
        self.approver = Some(Arc::new(approver));
        self
    }
}
