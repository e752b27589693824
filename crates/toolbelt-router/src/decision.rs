//! [`RouteRequest`] and [`RouteDecision`]: what a router is asked and what it answers.

use serde::{Deserialize, Serialize};
use toolbelt_core::Toolset;

/// What a router is asked: the input, some context, and the tools to choose from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RouteRequest {
    /// The user's input for this turn.
    pub input: String,
    /// Recent conversation texts, oldest first (may be empty).
    pub recent: Vec<String>,
    /// Tools already used earlier in this conversation.
    pub used_tools: Vec<String>,
    /// The toolset to choose from (the agent's whole view).
    pub toolset: Toolset,
}

impl RouteRequest {
    /// A request for `input` over `toolset`, with no conversation context.
    pub fn new(input: impl Into<String>, toolset: Toolset) -> Self {
        Self {
            input: input.into(),
            recent: Vec::new(),
            used_tools: Vec::new(),
            toolset,
        }
    }

    /// Adds recent conversation texts.
    #[must_use]
    pub fn with_recent(mut self, recent: Vec<String>) -> Self {
        self.recent = recent;
        self
    }

    /// Adds the tools used earlier in the conversation.
    #[must_use]
    pub fn with_used_tools(mut self, used: Vec<String>) -> Self {
        self.used_tools = used;
        self
    }
}

/// A tool chosen by a router, with its score (higher is better; scale is per router).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredTool {
    /// The tool name.
    pub name: String,
    /// The router's score.
    pub score: f32,
}

/// What the agent should do with the tools for this turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RouteOutcome {
    /// Send the ranked tools (all of them when `fallback` is set).
    Tools,
    /// No tool is needed: answer directly and send no schemas.
    Direct,
    /// The request is too ambiguous: ask the user this question first.
    Clarify {
        /// The question to ask.
        question: String,
    },
}

/// What a router sent instead of every tool when it was unsure and the toolset was large.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BoundedFallback {
    /// Tools in the toolset.
    pub toolset_size: usize,
    /// The size above which every tool is no longer sent.
    pub limit: usize,
    /// Ranked tools sent.
    pub sent: usize,
    /// Whether `search_tools` was added so the model can find the rest.
    pub search_tools: bool,
}

/// A router's answer, logged in the transcript so every run shows what the model saw and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RouteDecision {
    /// What to do.
    pub outcome: RouteOutcome,
    /// The tools to send, best first.
    pub tools: Vec<ScoredTool>,
    /// The groups (tags) chosen, if the router works by group.
    pub groups: Vec<String>,
    /// Skills chosen for this turn, best first: the agent adds their instructions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<ScoredTool>,
    /// Whether the router was unsure and sent every tool.
    pub fallback: bool,
    /// Set when the router was unsure but the toolset was too large to send whole:
    /// the best few were sent instead (with `search_tools` when the toolset has it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounded_fallback: Option<BoundedFallback>,
    /// Which router decided.
    pub router: String,
    /// A short reason for logs.
    pub reason: String,
}

impl RouteDecision {
    /// Ranked tools.
    pub fn tools(
        router: impl Into<String>,
        tools: Vec<ScoredTool>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            outcome: RouteOutcome::Tools,
            tools,
            groups: Vec::new(),
            skills: Vec::new(),
            fallback: false,
            bounded_fallback: None,
            router: router.into(),
            reason: reason.into(),
        }
    }

    /// Every tool of `toolset`, because the router was unsure.
    pub fn fallback(
        router: impl Into<String>,
        toolset: &Toolset,
        reason: impl Into<String>,
    ) -> Self {
        let tools = toolset
            .iter()
            .map(|t| ScoredTool {
                name: t.name().to_string(),
                score: 0.0,
            })
            .collect();
        Self {
            fallback: true,
            ..Self::tools(router, tools, reason)
        }
    }

    /// No tools needed.
    pub fn direct(router: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            outcome: RouteOutcome::Direct,
            ..Self::tools(router, Vec::new(), reason)
        }
    }

    /// Ask the user first.
    pub fn clarify(router: impl Into<String>, question: impl Into<String>) -> Self {
        let question = question.into();
        Self {
            outcome: RouteOutcome::Clarify {
                question: question.clone(),
            },
            ..Self::tools(router, Vec::new(), format!("ambiguous: {question}"))
        }
    }

    /// The names of the chosen tools, best first.
    pub fn tool_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name.clone()).collect()
    }
}
