//! Approval: who decides whether a call may run.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::ToolCall;
use crate::spec::ToolSpec;
use crate::tool::BoxFuture;

/// What the policy says about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run it.
    Allow,
    /// Refuse it.
    Deny,
    /// Ask the [`Approver`].
    Ask,
}

impl Decision {
    fn strictness(self) -> u8 {
        match self {
            Self::Allow => 0,
            Self::Ask => 1,
            Self::Deny => 2,
        }
    }
}

/// Decides per tool and per tag whether calls run, are refused or need asking.
///
/// Precedence: a rule for the tool's name; else the strictest rule among its
/// tags; else the policy default; else the tool's own
/// [`needs_approval`](crate::ToolPolicy::needs_approval) (ask) or allow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApprovalPolicy {
    /// Applies when no tool or tag rule matches; `None` defers to each tool.
    pub default: Option<Decision>,
    /// Rules by tool name.
    pub tools: HashMap<String, Decision>,
    /// Rules by tag.
    pub tags: HashMap<String, Decision>,
}

impl ApprovalPolicy {
    /// A policy that defers to each tool's `needs_approval`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A policy that allows everything (the CLI's `--yes`).
    pub fn allow_all() -> Self {
        Self {
            default: Some(Decision::Allow),
            ..Self::default()
        }
    }

    /// Sets the default decision.
    #[must_use]
    pub fn with_default(mut self, decision: Decision) -> Self {
        self.default = Some(decision);
        self
    }

    /// Sets the decision for one tool.
    #[must_use]
    pub fn with_tool(mut self, tool: impl Into<String>, decision: Decision) -> Self {
        self.tools.insert(tool.into(), decision);
        self
    }

    /// Sets the decision for every tool carrying `tag`.
    #[must_use]
    pub fn with_tag(mut self, tag: impl Into<String>, decision: Decision) -> Self {
        self.tags.insert(tag.into(), decision);
        self
    }

    /// The decision for a call of `spec`.
    pub fn decide(&self, spec: &ToolSpec) -> Decision {
        if let Some(d) = self.tools.get(spec.name.as_str()) {
            return *d;
        }
        let by_tag = spec
            .tags
            .iter()
            .filter_map(|t| self.tags.get(t))
            .copied()
            .max_by_key(|d| d.strictness());
        by_tag
            .or(self.default)
            .unwrap_or(if spec.policy.needs_approval {
                Decision::Ask
            } else {
                Decision::Allow
            })
    }
}

/// A call waiting for a decision.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The call, with validated arguments.
    pub call: ToolCall,
    /// The tool's spec.
    pub spec: ToolSpec,
}

/// The answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ApprovalResponse {
    /// Run the call as it is.
    Approve,
    /// Run the call with these arguments instead (they are validated again).
    Edit(Value),
    /// Refuse the call; the reason is shown to the model.
    Reject(String),
}

/// Answers approval requests: a terminal prompt, a web console, a test script.
///
/// The executor asks the approver it was built with, unless the call's
/// [`ToolContext`](crate::ToolContext) carries an `Arc<dyn Approver>`
/// extension: then that one answers (an agent run routes its calls to its
/// own event stream this way).
pub trait Approver: Send + Sync + 'static {
    /// Decides on `request`. Dropping the future (run cancelled) refuses the call.
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalResponse>;
}

impl<F, Fut> Approver for F
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ApprovalResponse> + Send + 'static,
{
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalResponse> {
        Box::pin(self(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, tags: &[&str], needs: bool) -> ToolSpec {
        ToolSpec::builder(name)
            .description("d")
            .tags(tags.iter().copied())
            .needs_approval(needs)
            .build()
            .unwrap()
    }

    #[test]
    fn precedence_is_tool_then_strictest_tag_then_default_then_tool_flag() {
        let policy = ApprovalPolicy::new()
            .with_tool("git", Decision::Allow)
            .with_tag("shell", Decision::Deny)
            .with_tag("file", Decision::Ask);
        assert_eq!(
            policy.decide(&spec("git", &["shell"], true)),
            Decision::Allow
        );
        assert_eq!(
            policy.decide(&spec("x", &["file", "shell"], false)),
            Decision::Deny
        );
        assert_eq!(policy.decide(&spec("y", &["web"], true)), Decision::Ask);
        assert_eq!(policy.decide(&spec("z", &["web"], false)), Decision::Allow);
        let strict = policy.with_default(Decision::Deny);
        assert_eq!(strict.decide(&spec("z", &["web"], false)), Decision::Deny);
    }
}
