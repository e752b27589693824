//! The tool factories of a process that serves stored tools: declarative HTTP and command
//! tools, and agent tools (a stored agent called as a tool).

use std::sync::{Arc, OnceLock, Weak};

use serde_json::{Value, json};
use toolbelt_core::{Tool, ToolContext, ToolError, ToolHandle, ToolOutput, ToolSpec};
use toolbelt_store::{StoreError, ToolFactory};
use toolbelt_tools::declarative::{Definition, Secrets};

use crate::agents::{AgentFactory, Inner};

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> StoreError {
    StoreError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

/// The factory a [`LiveRegistry`](toolbelt_store::LiveRegistry) uses for declarative tools,
/// with `{{secret.NAME}}` values from `secrets`.
pub fn declarative_factory(secrets: Secrets) -> impl ToolFactory {
    move |spec: &ToolSpec, definition: Option<&Value>| -> Result<ToolHandle, StoreError> {
        let definition = definition.ok_or_else(|| invalid("definition", "missing"))?;
        Definition::from_value(definition)
            .and_then(|d| d.build(spec.clone(), secrets.clone()))
            .map_err(|e| invalid(e.field, e.reason))
    }
}

/// The parameters of an agent tool: what [`toolbelt_agent::AgentTool`] reads.
pub fn agent_tool_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "input": {"type": "string", "description": "The task or question for the agent"},
            "context": {"type": "string", "description": "Background the agent needs (optional)"}
        },
        "required": ["input"],
        "additionalProperties": false
    })
}

/// The factory for agent tools: a stored tool `{agent: {agent: NAME}}` that, when called,
/// loads the agent NAME as it is at that moment, builds it through the [`AgentFactory`] it is
/// attached to (so every rule of that agent holds) and runs it, depth-limited like every agent
/// tool. It holds the agent factory weakly: the agent factory owns the live registry, which
/// owns this.
#[derive(Clone, Default)]
pub struct AgentToolFactory {
    agents: Arc<OnceLock<Weak<Inner>>>,
}

impl std::fmt::Debug for AgentToolFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentToolFactory")
            .field("attached", &self.agents.get().is_some())
            .finish()
    }
}

impl AgentToolFactory {
    /// A factory not attached yet; calls fail until [`AgentToolFactory::attach`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Connects the factory to the agent factory whose agents it runs (once; later calls are
    /// ignored).
    pub fn attach(&self, agents: &AgentFactory) {
        let _ = self.agents.set(agents.downgrade());
    }
}

impl ToolFactory for AgentToolFactory {
    fn build(&self, spec: &ToolSpec, definition: Option<&Value>) -> Result<ToolHandle, StoreError> {
        let agent = definition
            .and_then(|d| d.pointer("/agent/agent"))
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("agent.agent", "an agent tool names the stored agent to run"))?
            .to_owned();
        ToolHandle::new(StoredAgentTool {
            spec: spec.clone(),
            agent,
            factory: self.clone(),
        })
        .map_err(|e| invalid("spec", e.to_string()))
    }
}

struct StoredAgentTool {
    spec: ToolSpec,
    agent: String,
    factory: AgentToolFactory,
}

impl Tool for StoredAgentTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let agents = self
            .factory
            .agents
            .get()
            .and_then(AgentFactory::upgrade)
            .ok_or_else(|| {
                ToolError::failed("agent tools are not served by this process (no agent factory)")
            })?;
        let built = agents
            .build_named(&self.agent)
            .await
            .map_err(|e| ToolError::failed(format!("agent `{}`: {e}", self.agent)))?;
        toolbelt_agent::AgentTool::new(built.agent)
            .call(args, ctx)
            .await
    }
}
