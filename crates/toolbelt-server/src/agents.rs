//! [`AgentDef`] and [`AgentCatalog`]: the agents a server runs, as data.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use toolbelt_agent::Agent;
use toolbelt_core::{ApprovalPolicy, Executor, Registry, Toolset};
use toolbelt_llm::ProviderConfig;
use toolbelt_router::{AnyRouter, HybridRouter, KeywordRouter, LexicalRouter, SkillSet};
use utoipa::ToSchema;

use crate::problem::Problem;

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
    /// Selection expression over groups and tools, e.g. `file_ops,web,-shell_exec` (`*` = every tool).
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
    #[schema(value_type = Object)]
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

    /// The agent's toolset in `registry`.
    ///
    /// # Errors
    /// 422 `invalid_selection` at `/tools`.
    pub fn toolset(&self, registry: &Registry) -> Result<Toolset, Problem> {
        registry.select(&self.tools).map_err(|e| {
            Problem::invalid_field("/tools", e.to_string()).with_code("invalid_selection")
        })
    }

    /// The provider settings: the environment, with this definition on top.
    ///
    /// # Errors
    /// 422 `provider_unavailable` when no provider is configured.
    pub fn provider_config(&self) -> Result<ProviderConfig, Problem> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let p = &self.provider;
        ProviderConfig::from_vars(|name| match name {
            "TOOLBELT_PROVIDER" => p.kind.clone().or_else(|| env(name)),
            "OPENAI_BASE_URL" | "ANTHROPIC_BASE_URL" => p.base_url.clone().or_else(|| env(name)),
            "TOOLBELT_MODEL" => p.model.clone().or_else(|| env(name)),
            "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" => match &p.api_key_env {
                Some(var) => env(var),
                None => env(name),
            },
            other => env(other),
        })
        .map_err(|e| {
            Problem::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "provider_unavailable",
                format!("agent `{}` has no usable model provider: {e}", self.id),
            )
        })
    }

    /// The model id its runs are counted under in the token metrics (empty without a provider).
    pub fn model_name(&self) -> String {
        self.provider_config()
            .map(|c| c.model_or_default().to_owned())
            .unwrap_or_default()
    }

    /// Builds the runnable agent over `registry`.
    ///
    /// # Errors
    /// A problem naming the field that cannot be used.
    pub fn build(&self, registry: &Registry) -> Result<Agent, Problem> {
        self.build_with(registry, default_router(), SkillSet::default())
    }

    /// Builds the runnable agent over `registry`, routing each turn with `router` (the
    /// server's, [`crate::AppState::router`], so agents share its indexes and encoder), with
    /// `skills` whose instructions a run adds when its request matches them (see
    /// `AgentBuilder::skills`).
    ///
    /// # Errors
    /// A problem naming the field that cannot be used.
    pub fn build_with(
        &self,
        registry: &Registry,
        router: AnyRouter,
        skills: SkillSet,
    ) -> Result<Agent, Problem> {
        let tools = self.toolset(registry)?;
        let provider = self.provider_config()?.into_provider().map_err(|e| {
            Problem::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "provider_unavailable",
                format!("agent `{}`: {e}", self.id),
            )
        })?;
        let mut builder = Agent::builder(provider)
            .name(self.id.clone())
            .description(self.description.clone())
            .tools(tools)
            .router(router)
            .max_iterations(self.max_iterations.max(1))
            .executor(Executor::builder().policy(self.approval.clone()).build());
        if let Some(prompt) = &self.system_prompt {
            builder = builder.system_prompt(prompt.clone());
        }
        builder.skills(skills).build().map_err(|e| {
            Problem::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_agent",
                format!("agent `{}`: {e}", self.id),
            )
        })
    }

    /// Checks the fields a client sent.
    ///
    /// # Errors
    /// 422 naming the field.
    pub fn validate(&self, registry: &Registry) -> Result<(), Problem> {
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
        self.toolset(registry).map(|_| ())
    }
}

/// The router of a server without an embedding model: BM25 with the concept lexicon, the
/// built-in keyword groups, adaptive k ([`default_hybrid`]).
pub fn default_router() -> AnyRouter {
    AnyRouter::new(default_hybrid())
}

/// The hybrid router a server starts from: BM25 with the concept lexicon, the built-in
/// keyword groups, adaptive k. `toolbelt serve` adds the multilingual encoder to it
/// ([`HybridRouter::with_multilingual_slot`]) when the model is present.
pub fn default_hybrid() -> HybridRouter {
    HybridRouter::new(LexicalRouter::default()).with_keyword(KeywordRouter::builtin())
}

/// The agents a server knows, by id: stored agents first, then those of the configuration.
/// Clones share the same map.
#[derive(Debug, Clone, Default)]
pub struct AgentCatalog {
    agents: Arc<RwLock<BTreeMap<String, AgentDef>>>,
    store: Arc<std::sync::OnceLock<toolbelt_store::Store>>,
}

impl AgentDef {
    /// The runnable definition of a stored agent: its selection plus its bound tools.
    pub fn from_record(record: &toolbelt_store::AgentRecord) -> Self {
        let mut items: Vec<String> = Vec::new();
        if !record.selection.trim().is_empty() {
            items.push(record.selection.clone());
        }
        items.extend(record.tools.iter().map(|b| format!("tool:{}", b.tool)));
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
                base_url: None,
                model: record.model.clone(),
                api_key_env: None,
            },
            max_iterations: record
                .options
                .max_iterations
                .unwrap_or_else(default_iterations),
            approval: ApprovalPolicy::new(),
        }
    }
}

impl AgentCatalog {
    /// A catalog holding `defs`.
    pub fn new(defs: impl IntoIterator<Item = AgentDef>) -> Self {
        let map = defs.into_iter().map(|d| (d.id.clone(), d)).collect();
        Self {
            agents: Arc::new(RwLock::new(map)),
            store: Arc::default(),
        }
    }

    /// Also serves the agents stored in `store` (they win over configured ones of the same id).
    pub fn set_store(&self, store: toolbelt_store::Store) {
        let _ = self.store.set(store);
    }

    /// The agent `id`, stored or configured.
    ///
    /// # Errors
    /// 404 `agent_not_found` listing the ids that exist; 500 when the database fails.
    pub async fn find(&self, id: &str) -> Result<AgentDef, Problem> {
        if let Some(store) = self.store.get() {
            match store.get_agent(id).await {
                Ok(record) => return Ok(AgentDef::from_record(&record)),
                Err(toolbelt_store::StoreError::NotFound { .. }) => {}
                Err(e) => return Err(Problem::internal(e)),
            }
        }
        self.get(id)
    }

    /// Every agent: stored ones, then configured ones not shadowed by a stored one.
    ///
    /// # Errors
    /// 500 when the database fails.
    pub async fn list_all(&self) -> Result<Vec<AgentDef>, Problem> {
        let mut out: Vec<AgentDef> = match self.store.get() {
            Some(store) => store
                .list_agents()
                .await
                .map_err(Problem::internal)?
                .iter()
                .map(AgentDef::from_record)
                .collect(),
            None => Vec::new(),
        };
        for def in self.list() {
            if !out.iter().any(|d| d.id == def.id) {
                out.push(def);
            }
        }
        Ok(out)
    }

    /// The agent `id`.
    ///
    /// # Errors
    /// 404 `agent_not_found` listing the ids that exist.
    pub fn get(&self, id: &str) -> Result<AgentDef, Problem> {
        let agents = self.read();
        agents.get(id).cloned().ok_or_else(|| {
            Problem::not_found("agent_not_found", format!("no agent `{id}`"))
                .with_pointer("id")
                .with_nearest(agents.keys().take(20).cloned().collect())
        })
    }

    /// Every agent, by id.
    pub fn list(&self) -> Vec<AgentDef> {
        self.read().values().cloned().collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, AgentDef>> {
        self.agents
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
