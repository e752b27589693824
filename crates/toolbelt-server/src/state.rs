//! [`AppState`]: what every handler shares.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolbelt_core::{Executor, Extensions, Registry};
use toolbelt_host::runs::RunRegistry;
use toolbelt_host::{AgentFactory, AgentFactoryBuilder, Database, Host};
use toolbelt_router::AnyRouter;
use toolbelt_tools::{BuiltinConfig, Human, Memory, MemoryScope, Routines, Workspace};

use crate::config::ServerConfig;
use crate::tokens::TokenBook;

/// The live registry, the executor, the router, the agents, the runs and the tokens.
///
/// Cloning is one reference count: every request clones the state several times (each
/// middleware layer and handler takes its own), so it is one `Arc` around the shared
/// parts, read through the accessor methods.
#[derive(Clone)]
pub struct AppState {
    shared: Arc<Shared>,
}

/// What [`AppState`] shares: the host (agents, runs, executor, store and the background
/// tasks it owns), and what only HTTP needs.
struct Shared {
    host: Arc<Host>,
    tokens: TokenBook,
    extensions: Arc<Extensions>,
    config: Arc<ServerConfig>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("tools", &self.registry().len())
            .field("config", &self.shared.config)
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
    /// A configured agent does not check.
    #[error("configured agent `{agent}`")]
    Agent {
        /// The agent's id.
        agent: String,
        /// What is wrong.
        #[source]
        source: toolbelt_store::StoreError,
    },
}

impl AppState {
    /// The host: agents, runs, the executor, the store, and the background tasks it owns
    /// (the routine loop, learning from the run log), which [`Host::shutdown`] stops.
    pub fn host(&self) -> &Arc<Host> {
        &self.shared.host
    }

    /// The agents, configured and stored, and the tools they are built over: every run,
    /// preview and tool list of an agent goes through it.
    pub fn agents(&self) -> &AgentFactory {
        self.shared.host.agents()
    }

    /// Runs direct tool calls (`POST /tools/{name}/call`).
    pub fn executor(&self) -> &Executor {
        self.shared.host.executor()
    }

    /// Previews routing decisions (`POST /route`): the agents' shared base router.
    pub fn router(&self) -> &AnyRouter {
        self.shared.host.router()
    }

    /// The runs.
    pub fn runs(&self) -> &RunRegistry {
        self.shared.host.runs()
    }

    /// Who may do what.
    pub fn tokens(&self) -> &TokenBook {
        &self.shared.tokens
    }

    /// Context given to every tool call (workspace, HTTP limits, the question channel).
    pub fn extensions(&self) -> &Extensions {
        &self.shared.extensions
    }

    /// The database, when the server has one (tokens, runs).
    pub fn store(&self) -> Option<&toolbelt_store::Store> {
        self.shared.host.store()
    }

    /// The audit log of tool calls and runs (batched writes to the store), when there is a
    /// store.
    pub fn run_log(&self) -> Option<&toolbelt_store::RunLogWriter> {
        self.shared.host.run_log()
    }

    /// The settings in force.
    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    /// Cancelled when the server begins to shut down (SSE streams end with a `shutdown`
    /// event): the host's shutdown token, so the host's background tasks end with it.
    pub fn shutdown(&self) -> &CancellationToken {
        self.shared.host.shutdown_token()
    }

    /// The supervisor of the MCP servers stored in the database (the host's), when there is
    /// one.
    pub fn mcp_servers(&self) -> Option<&toolbelt_host::McpServers> {
        self.shared.host.mcp_servers()
    }

    /// The live registry: what calls, routing and agents see.
    pub fn registry(&self) -> &Registry {
        self.shared.host.registry()
    }

    /// The live registry, shared (an MCP endpoint follows its changes).
    pub fn shared_registry(&self) -> Arc<Registry> {
        self.shared.host.agents().shared_registry()
    }

    /// The registry that follows the store, when tools are stored.
    pub fn live(&self) -> Option<&Arc<toolbelt_store::LiveRegistry>> {
        self.shared.host.agents().live_registry()
    }

    /// State over an opened database: tools, agents, tokens and runs stored there, and agent
    /// tools that run agents built by this state's factory. This is what `toolbelt serve` uses.
    ///
    /// # Errors
    /// As [`AppState::new`].
    pub fn with_database(db: &Database, config: ServerConfig) -> Result<Self, StateError> {
        let store = db.live.store().clone();
        Self::build(db.agent_factory(), config, Some(store))
    }

    /// State over a registry that follows `live`'s store (tools, tokens and runs stored there).
    /// Stored agent tools are not served (use [`AppState::with_database`]).
    ///
    /// # Errors
    /// As [`AppState::new`].
    pub fn with_live(
        live: Arc<toolbelt_store::LiveRegistry>,
        config: ServerConfig,
    ) -> Result<Self, StateError> {
        let store = live.store().clone();
        Self::build(AgentFactory::live(live), config, Some(store))
    }

    /// The tool context of a run of `agent`: the shared extensions plus, when there is a
    /// store, the agent's memory (`memory_*` tools, scoped to the agent) and the routines
    /// (the `routine` tool; new routines run this agent unless told otherwise).
    pub fn run_extensions(&self, agent: &str) -> Extensions {
        let mut extensions = self.shared.extensions.as_ref().clone();
        if let Some(store) = self.shared.host.store() {
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
        Self::build(AgentFactory::plain(registry), config, None)
    }

    /// `store`, when given, keeps tokens and run records: only with a factory over the same
    /// store, so agents and runs never come from two databases.
    fn build(
        agents: AgentFactoryBuilder,
        config: ServerConfig,
        store: Option<toolbelt_store::Store>,
    ) -> Result<Self, StateError> {
        let configured = config
            .agents
            .iter()
            .map(|spec| {
                spec.normalized()
                    .map(|spec| toolbelt_store::Stored::unstored(spec, "configuration"))
                    .map_err(|source| StateError::Agent {
                        agent: spec.name.clone(),
                        source,
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let agents = agents.configured(configured).build();
        let mut tokens = if config.dev {
            TokenBook::dev()
        } else {
            TokenBook::from_config(&config.tokens)?
        };
        let workspace = Workspace::new(&config.workspace)
            .map_err(|source| StateError::Workspace {
                path: config.workspace.display().to_string(),
                source,
            })?
            // The file tools never touch the server's database or secrets, even where the
            // configuration put them inside the workspace.
            .with_reserved(
                toolbelt_host::paths::KeptData::new()
                    .database(&config.database_url)
                    .secrets_file_from_env()
                    .reserved_paths(),
            );
        let http = config.http_config()?;
        let runs = RunRegistry::new().with_observer(Arc::new(crate::metrics::RunMetrics));
        let mcp = config.mcp_supervision(http.clone());
        let extensions = BuiltinConfig::new(workspace)
            .with_http(http)
            .with_human(Human::new(runs.human_channel()))
            .extensions();
        let mut host = Host::builder(agents).runs(runs).mcp_servers(mcp);
        if let Some(store) = store {
            tokens = tokens.with_store(store.clone());
            host = host.store(store);
        }
        Ok(Self {
            shared: Arc::new(Shared {
                host: Arc::new(host.build()),
                tokens,
                extensions: Arc::new(extensions),
                config: Arc::new(config),
            }),
        })
    }
}
