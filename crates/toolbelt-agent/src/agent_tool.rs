//! [`AgentTool`]: an agent offered to other agents as a tool.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use toolbelt_core::{
    Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolPolicy, ToolSpec, parse_args,
};

use crate::agent::Agent;
use crate::error::AgentError;
use crate::options::RunOptions;

/// How many agents deep a call may go by default.
pub const DEFAULT_MAX_DEPTH: u32 = 3;

/// Time allowed to an agent used as a tool when its agent sets no run timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// An agent used as a tool: arguments `{input, context?}`, result its answer.
///
/// Its name and description are the agent's. The inner run gets the caller's
/// cancellation, extensions (so an approver of the outer run answers for the
/// inner one too) and depth plus one; past [`AgentTool::max_depth`] the call
/// fails with a tool error instead of recursing further.
///
/// ```no_run
/// # fn demo(researcher: toolbelt_agent::Agent, registry: &toolbelt_core::Registry) -> anyhow::Result<()> {
/// registry.add_tool(researcher.as_tool())?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct AgentTool {
    agent: Agent,
    max_depth: u32,
    tags: Vec<String>,
}

#[derive(Deserialize)]
struct Args {
    input: String,
    #[serde(default)]
    context: Option<String>,
}

impl Agent {
    /// This agent as a tool for other agents.
    pub fn as_tool(&self) -> AgentTool {
        AgentTool::new(self.clone())
    }
}

impl AgentTool {
    /// Wraps `agent`, with a depth limit of [`DEFAULT_MAX_DEPTH`].
    pub fn new(agent: Agent) -> Self {
        Self {
            agent,
            max_depth: DEFAULT_MAX_DEPTH,
            tags: vec!["agents".to_owned()],
        }
    }

    /// Most agents-as-tools nested below a top-level run (at least 1).
    #[must_use]
    pub fn with_max_depth(mut self, depth: u32) -> Self {
        self.max_depth = depth.max(1);
        self
    }

    /// Adds a tag (group); every agent tool is in `agents`.
    #[must_use]
    pub fn with_tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// The depth limit.
    pub fn max_depth(&self) -> u32 {
        self.max_depth
    }

    /// The wrapped agent.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }
}

impl Tool for AgentTool {
    fn spec(&self) -> ToolSpec {
        let writes = self.agent.tools().specs().any(|s| !s.policy.is_read_only());
        let mut policy = if writes {
            ToolPolicy::mutating()
        } else {
            ToolPolicy::read_only()
        };
        // Its own tools ask for approval where they must; asking for the whole agent too would ask twice.
        policy.needs_approval = false;
        // The agent's name was checked as a tool name when it was built.
        ToolSpec::builder(self.agent.name())
            .description(self.agent.description())
            .parameters(json!({
                "type": "object",
                "properties": {
                    "input": {"type": "string", "description": "The task or question for the agent"},
                    "context": {"type": "string", "description": "Background the agent needs (optional)"}
                },
                "required": ["input"],
                "additionalProperties": false
            }))
            .tags(self.tags.iter().cloned())
            .kind(ToolKind::Agent)
            .policy(policy)
            .timeout(self.agent.options().run_timeout.unwrap_or(DEFAULT_TIMEOUT))
            .build_unchecked()
    }

    async fn call(
        &self,
        args: serde_json::Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let depth = ctx.depth() + 1;
        if depth > self.max_depth {
            return Err(ToolError::failed(format!(
                "agent `{}` cannot be called here: agents are already nested {} deep and the limit is {}; do the task yourself",
                self.agent.name(),
                ctx.depth(),
                self.max_depth
            )));
        }
        let args: Args = parse_args(args)?;
        let input = match args.context.filter(|c| !c.trim().is_empty()) {
            Some(context) => format!("{}\n\nContext:\n{context}", args.input),
            None => args.input,
        };
        let options = RunOptions::new()
            .with_cancellation(ctx.cancellation().clone())
            .with_extensions(ctx.extensions().clone())
            .with_depth(depth);
        match self.agent.run_with(input, options).await {
            Ok(out) => {
                let usage = out.usage();
                let mut output = ToolOutput::text(out.answer.clone());
                output.json = Some(json!({
                    "answer": out.answer,
                    "clarification": out.is_clarification(),
                    "model_calls": out.transcript.model_calls(),
                    "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
                }));
                Ok(output)
            }
            Err(e) => Err(to_tool_error(e)),
        }
    }
}

/// The model sees why the agent it called gave no answer.
fn to_tool_error(error: AgentError) -> ToolError {
    match error {
        AgentError::Cancelled { .. } => ToolError::Cancelled,
        AgentError::Timeout { after, .. } => ToolError::Timeout { after },
        AgentError::Provider { ref source, .. } if source.is_retryable() => {
            ToolError::retryable(format!("{error}: {source}"))
        }
        AgentError::Provider { ref source, .. } => ToolError::failed(format!("{error}: {source}")),
        other => ToolError::failed(other.to_string()),
    }
}
