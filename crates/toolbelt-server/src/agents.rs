//! [`AgentDef`]: an agent written in the server's configuration file, and the API's view of
//! every agent. A configured agent becomes an agent record ([`AgentDef::to_record`]) and is
//! built by the host's `AgentFactory`, like a stored one.

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use toolbelt_core::ApprovalPolicy;
use toolbelt_host::HostError;
use toolbelt_host::runs::RunError;
use toolbelt_store::{AgentSettings, AgentSpec, Stored};
use utoipa::ToSchema;

use crate::problem::{InstanceRef, Problem};

/// Which model an agent talks to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderDef {
    /// `openai` (and compatible servers) or `anthropic`; empty takes `TOOLBELT_PROVIDER`.
    pub kind: Option<String>,
    /// API root, e.g. `http://localhost:11434/v1`; empty takes `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`.
    pub base_url: Option<String>,
    /// Model id; empty takes `TOOLBELT_MODEL` or the provider's default.
    pub model: Option<String>,
    /// Name of the environment variable holding the API key (the key itself is never stored).
    pub api_key_env: Option<String>,
}

/// An agent as data: what it is told, which tools it may use, which model answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentDef {
    /// Unique id, used in URLs.
    pub id: String,
    /// What the agent is for.
    #[serde(default)]
    pub description: String,
    /// The system prompt.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Selection expression over groups and tools, e.g. `file_ops,web,-shell_exec` (`*` = every
    /// tool); for a stored agent, its selection followed by its bound tools.
    #[serde(default = "all_tools")]
    pub tools: String,
    /// The model.
    #[serde(default)]
    pub provider: ProviderDef,
    /// Most model calls per run.
    #[serde(default = "default_iterations")]
    pub max_iterations: u32,
    /// Which calls need a person's approval (`default`, `tools`, `tags`: `allow` / `ask` / `deny`).
    #[serde(default)]
    #[schema(value_type = crate::api::schema::ApprovalPolicySchema)]
    pub approval: ApprovalPolicy,
}

fn all_tools() -> String {
    "*".to_owned()
}

fn default_iterations() -> u32 {
    10
}

impl AgentDef {
    /// The agent `scripts/run.sh` starts with: every built-in tool, the model from the environment.
    pub fn default_agent() -> Self {
        Self {
            id: "default".to_owned(),
            description: "General assistant with every built-in tool".to_owned(),
            system_prompt: Some(
                "You are a careful assistant. Use the tools when they help; say what you did."
                    .to_owned(),
            ),
            tools: all_tools(),
            provider: ProviderDef::default(),
            max_iterations: default_iterations(),
            approval: ApprovalPolicy::new(),
        }
    }

    /// The record this configured agent is built from: the same shape as a stored agent's,
    /// so the host builds both the same way.
    ///
    /// # Errors
    /// The field that does not check, as storing the agent would report it.
    pub fn to_record(&self) -> Result<Stored<AgentSpec>, toolbelt_store::StoreError> {
        let mut draft = AgentSpec::new(&self.id);
        draft.description.clone_from(&self.description);
        draft.system_prompt.clone_from(&self.system_prompt);
        draft.selection.clone_from(&self.tools);
        draft.provider.clone_from(&self.provider.kind);
        draft.model.clone_from(&self.provider.model);
        let mut options = AgentSettings::default();
        options.max_iterations = Some(self.max_iterations);
        options.approval = Some(self.approval.clone());
        options.base_url.clone_from(&self.provider.base_url);
        options.api_key_env.clone_from(&self.provider.api_key_env);
        draft.options = options;
        Ok(Stored::unstored(draft.normalized()?, "configuration"))
    }

    /// The API's view of an agent record: its selection followed by its bound tools.
    pub fn from_record(record: &Stored<AgentSpec>) -> Self {
        let mut items: Vec<String> = Vec::new();
        if !record.selection.trim().is_empty() {
            items.push(record.selection.clone());
        }
        items.extend(record.tools.iter().map(|b| match b.pinned_version {
            Some(v) => format!("tool:{}@{v}", b.tool),
            None => format!("tool:{}", b.tool),
        }));
        let o = &record.options;
        Self {
            id: record.name.clone(),
            description: record.description.clone(),
            system_prompt: record.system_prompt.clone(),
            tools: items.join(","),
            provider: ProviderDef {
                kind: record
                    .provider
                    .clone()
                    .filter(|p| matches!(p.as_str(), "openai" | "anthropic")),
                base_url: o.base_url.clone(),
                model: record.model.clone(),
                api_key_env: o.api_key_env.clone(),
            },
            max_iterations: o.max_iterations.unwrap_or_else(default_iterations),
            approval: o.approval.clone().unwrap_or_default(),
        }
    }

    /// Checks the fields a client sent.
    ///
    /// # Errors
    /// 422 naming the field.
    pub fn validate(&self, registry: &toolbelt_core::Registry) -> Result<(), Problem> {
        if self.id.is_empty()
            || self.id.len() > 64
            || !self
                .id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(Problem::invalid_field(
                "/id",
                "1-64 characters among a-z, A-Z, 0-9, `_` and `-`",
            ));
        }
        if self.max_iterations == 0 {
            return Err(Problem::invalid_field(
                "/max_iterations",
                "must be at least 1",
            ));
        }
        if let Some(kind) = &self.provider.kind
            && !matches!(kind.as_str(), "openai" | "anthropic")
        {
            return Err(Problem::invalid_field(
                "/provider/kind",
                format!("unknown provider `{kind}`; use `openai` or `anthropic`"),
            ));
        }
        registry.select(&self.tools).map(|_| ()).map_err(|e| {
            Problem::invalid_field("/tools", e.to_string()).with_code("invalid_selection")
        })
    }
}

/// The problem document for a host error: one code per condition.
pub(crate) fn host_problem(error: HostError) -> Problem {
    match error {
        HostError::AgentNotFound { name, known } => {
            Problem::not_found("agent_not_found", format!("no agent `{name}`"))
                .with_pointer("id")
                .with_nearest(known)
        }
        HostError::InvalidAgent {
            agent,
            field,
            reason,
        } => {
            let code = if field == "selection" {
                "invalid_selection"
            } else {
                "invalid_agent"
            };
            Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                code,
                format!("agent `{agent}`: {field}: {reason}"),
            )
            .with_pointer(format!("/{}", field.replace('.', "/")))
        }
        e @ HostError::Provider { .. } => {
            let detail = match std::error::Error::source(&e) {
                Some(source) => format!("{e}: {source}"),
                None => e.to_string(),
            };
            Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "provider_unavailable",
                detail,
            )
        }
        e @ HostError::AgentNotAllowed { .. } => {
            Problem::new(StatusCode::FORBIDDEN, "agent_not_allowed", e.to_string())
        }
        e @ HostError::ToolNotAllowed { .. } => {
            Problem::new(StatusCode::FORBIDDEN, "tool_not_allowed", e.to_string())
        }
        e @ HostError::ServerNotAllowed { .. } => {
            Problem::new(StatusCode::FORBIDDEN, "server_not_allowed", e.to_string())
        }
        HostError::Store(e) => crate::problem::Problem::from(e),
        other => Problem::internal(other),
    }
}

/// The problem document for a run error: one code per condition ([`RunError::code`]), the
/// holding instance in `instance` when another one holds the run.
impl From<RunError> for Problem {
    fn from(error: RunError) -> Self {
        let code = error.code();
        let problem = match &error {
            RunError::RunNotFound { .. }
            | RunError::ApprovalNotFound { .. }
            | RunError::QuestionNotFound { .. } => {
                Problem::not_found(code, error.to_string()).with_pointer("id")
            }
            RunError::RunFinished { .. } => Problem::conflict(code, error.to_string()),
            RunError::HeldByOtherInstance { .. } => {
                Problem::new(StatusCode::MISDIRECTED_REQUEST, code, error.to_string())
                    .with_pointer("id")
            }
            RunError::HolderUnreachable { .. } => {
                Problem::conflict(code, error.to_string()).with_pointer("id")
            }
            RunError::Store(source) => return Problem::internal(format!("{error}: {source}")),
            _ => return Problem::internal(error),
        };
        match error.holder() {
            Some(holder) => problem.with_instance(InstanceRef {
                id: holder.id.clone(),
                url: holder.url.clone(),
                location: holder.location.clone(),
            }),
            None => problem,
        }
    }
}
