//! [`AppState`]: what every handler shares.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolbelt_core::{Executor, Extensions, Registry};
use toolbelt_router::{AnyRouter, Skill, SkillSet};
use toolbelt_tools::{BuiltinConfig, Human, Memory, MemoryScope, Routines, Workspace};

use crate::agents::{AgentCatalog, default_router};
use crate::auth::TokenBook;
use crate::config::ServerConfig;
use crate::runs::RunRegistry;

/// The live registry, the executor, the router, the agents, the runs and the tokens.
///
/// Cloning is cheap (every field is shared).
#[derive(Clone)]
pub struct AppState {
    /// The tools every request sees (read it through [`AppState::registry`]).
    tools: Tools,
    /// Runs direct tool calls (`POST /tools/{name}/call`).
    pub executor: Executor,
    /// Previews routing decisions (`POST /route`).
    pub router: AnyRouter,
    /// The agents.
    pub agents: AgentCatalog,
    /// The runs.
    pub runs: RunRegistry,
    /// Who may do what.
    pub tokens: TokenBook,
    /// Context given to every tool call (workspace, HTTP limits, the question channel).
    pub extensions: Arc<Extensions>,
    /// The database, when the server has one (tokens, runs).
    pub store: Option<toolbelt_store::Store>,
    /// The audit log of tool calls and runs (batched writes to the store), when there is a store.
    pub run_log: Option<toolbelt_store::RunLogWriter>,
    /// The settings in force.
    pub config: Arc<ServerConfig>,
    /// Cancelled when the server begins to shut down (SSE streams end with a `shutdown` event).
    pub shutdown: CancellationToken,
    /// The clients of the MCP servers stored in the database ([`crate::mcp_servers::spawn`]).
    pub mcp_servers: crate::mcp_servers::McpServers,
}

/// Where the live tools are: a registry of the process, or one that follows the store.
#[derive(Clone)]
enum Tools {
    Plain(Arc<Registry>),
    Live(Arc<toolbelt_store::LiveRegistry>),
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("tools", &self.registry().len())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Why the state could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The workspace directory cannot be used.
    #[error("workspace {path}")]
    Workspace {
        /// The directory.
        path: String,
        /// Why.
        #[source]
        source: toolbelt_tools::WorkspaceError,
    },
    /// The configuration is not usable.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}

impl AppState {
    /// Builds the runnable agent of `def` with the skills stored in the database (read
    /// afresh for each run, so a skill added or removed counts from the next run).
    ///
    /// # Errors
    /// As [`AgentDef::build`](crate::agents::AgentDef::build).
    pub async fn build_agent(
        &self,
        def: &crate::agents::AgentDef,
    ) -> Result<toolbelt_agent::Agent, crate::problem::Problem> {
        def.build_with(self.registry(), self.router.clone(), self.skills().await)
    }

    /// The skills stored in the database (none without one). A skill that cannot be read
    /// is logged and left out: runs go on without it.
    pub async fn skills(&self) -> SkillSet {
        let Some(store) = &self.store else {
            return SkillSet::default();
        };
        let records = match store.list_skills().await {
            Ok(records) => records,
            Err(error) => {
                tracing::warn!(%error, "cannot read the stored skills; running without them");
                return SkillSet::default();
            }
        };
        let skills = records
            .into_iter()
            .filter_map(|record| {
                let name = record.name.clone();
                skill_of(record)
                    .map_err(|error| tracing::warn!(skill = %name, %error, "stored skill left out"))
                    .ok()
            })
            .collect();
        SkillSet::new(skills)
    }

    /// The live registry: what calls, routing and agents see.
    pub fn registry(&self) -> &Registry {
        match &self.tools {
            Tools::Plain(r) => r,
            Tools::Live(l) => l.registry(),
        }
    }

    /// The live registry, shared (an MCP endpoint follows its changes).
    pub fn shared_registry(&self) -> Arc<Registry> {
        match &self.tools {
            Tools::Plain(r) => Arc::clone(r),
            Tools::Live(l) => l.shared_registry(),
        }
    }

    /// The registry that follows the store, when tools are stored.
    pub fn live(&self) -> Option<&Arc<toolbelt_store::LiveRegistry>> {
        match &self.tools {
            Tools::Plain(_) => None,
            Tools::Live(l) => Some(l),
        }
    }

    /// State over a registry that follows `live`'s store (tools, tokens and runs stored there).
    ///
    /// # Errors
    /// As [`AppState::new`].
    pub fn with_live(
        live: Arc<toolbelt_store::LiveRegistry>,
        config: ServerConfig,
    ) -> Result<Self, StateError> {
        let store = live.store().clone();
        let mut state = Self::new(Arc::new(Registry::new()), config)?;
        state.tools = Tools::Live(live);
        Ok(state.with_store(store))
    }

    /// Uses `store` for tokens and run records.
    #[must_use]
    pub fn with_store(mut self, store: toolbelt_store::Store) -> Self {
        self.tokens = self.tokens.with_store(store.clone());
        self.runs = self.runs.with_store(store.clone());
        self.agents.set_store(store.clone());
        // The writer task ends (after a last flush) when every writer is dropped.
        let (writer, _task) = store.run_log(toolbelt_store::RunLogConfig::default());
        self.runs = self.runs.with_run_log(writer.clone());
        self.run_log = Some(writer);
        self.store = Some(store);
        self
    }

    /// The tool context of a run of `agent`: the shared extensions plus, when there is a
    /// store, the agent's memory (`memory_*` tools, scoped to the agent) and the routines
    /// (the `routine` tool; new routines run this agent unless told otherwise).
    pub fn run_extensions(&self, agent: &str) -> Extensions {
        let mut extensions = self.extensions.as_ref().clone();
        if let Some(store) = &self.store {
            extensions.insert(Memory::new(
                Arc::new(store.memory()),
                MemoryScope::agent(agent),
            ));
            extensions.insert(Routines::new(Arc::new(store.routines()), agent));
        }
        extensions
    }

    /// State over `registry` with the settings of `config`.
    ///
    /// # Errors
    /// [`StateError`] when the workspace or the tokens cannot be used.
    pub fn new(registry: Arc<Registry>, config: ServerConfig) -> Result<Self, StateError> {
        let tokens = if config.dev {
            TokenBook::dev()
        } else {
            TokenBook::from_config(&config.tokens)?
        };
        let workspace =
            Workspace::new(&config.workspace).map_err(|source| StateError::Workspace {
                path: config.workspace.display().to_string(),
                source,
            })?;
        let runs = RunRegistry::new();
        let extensions = BuiltinConfig::new(workspace)
            .with_human(Human::new(runs.human_channel()))
            .extensions();
        Ok(Self {
            tools: Tools::Plain(registry),
            executor: Executor::new(),
            router: default_router(),
            agents: AgentCatalog::new(config.agents.clone()),
            runs,
            tokens,
            extensions: Arc::new(extensions),
            config: Arc::new(config),
            store: None,
            run_log: None,
            shutdown: CancellationToken::new(),
            mcp_servers: crate::mcp_servers::McpServers::default(),
        })
    }
}

/// The runtime's skill for a stored one.
fn skill_of(record: toolbelt_store::SkillRecord) -> Result<Skill, toolbelt_router::SkillError> {
    let mut skill = Skill::from_parts(record.name, record.description, record.instructions)?;
    skill.metadata = record.metadata;
    skill.files = record.files.into_iter().map(Into::into).collect();
    Ok(skill)
}
