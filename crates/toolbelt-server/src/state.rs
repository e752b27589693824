//! [`AppState`]: what every handler shares.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolbelt_core::{Executor, Extensions, Registry};
use toolbelt_host::runs::RunRegistry;
use toolbelt_host::{AgentFactory, AgentFactoryBuilder, Database};
use toolbelt_router::AnyRouter;
use toolbelt_tools::{BuiltinConfig, Human, Memory, MemoryScope, Routines, Workspace};

use crate::auth::TokenBook;
use crate::config::ServerConfig;

/// The live registry, the executor, the router, the agents, the runs and the tokens.
///
/// Cloning is one reference count: every request clones the state several times (each
/// middleware layer and handler takes its own), so it is one `Arc` around the shared
/// parts, read through the accessor methods.
#[derive(Clone)]
pub struct AppState {
    shared: Arc<Shared>,
}

/// What [`AppState`] shares.
struct Shared {
    agents: AgentFactory,
    executor: Executor,
    router: AnyRouter,
    runs: RunRegistry,
    tokens: TokenBook,
    extensions: Arc<Extensions>,
    store: Option<toolbelt_store::Store>,
    run_log: Option<toolbelt_store::RunLogWriter>,
    config: Arc<ServerConfig>,
    shutdown: CancellationToken,
    mcp_servers: crate::mcp_servers::McpServers,
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
    /// The agents, configured and stored, and the tools they are built over: every run,
    /// preview and tool list of an agent goes through it.
    pub fn agents(&self) -> &AgentFactory {
        &self.shared.agents
    }

    /// Runs direct tool calls (`POST /tools/{name}/call`).
    pub fn executor(&self) -> &Executor {
        &self.shared.executor
    }

    /// Previews routing decisions (`POST /route`): the agents' shared base router.
    pub fn router(&self) -> &AnyRouter {
        &self.shared.router
    }

    /// The runs.
    pub fn runs(&self) -> &RunRegistry {
        &self.shared.runs
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
        self.shared.store.as_ref()
    }

    /// The audit log of tool calls and runs (batched writes to the store), when there is a
    /// store.
    pub fn run_log(&self) -> Option<&toolbelt_store::RunLogWriter> {
        self.shared.run_log.as_ref()
    }

    /// The settings in force.
    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    /// Cancelled when the server begins to shut down (SSE streams end with a `shutdown`
    /// event).
    pub fn shutdown(&self) -> &CancellationToken {
        &self.shared.shutdown
    }

    /// The clients of the MCP servers stored in the database ([`crate::mcp_servers::spawn`]).
    pub fn mcp_servers(&self) -> &crate::mcp_servers::McpServers {
        &self.shared.mcp_servers
    }

    /// The live registry: what calls, routing and agents see.
    pub fn registry(&self) -> &Registry {
        self.shared.agents.registry()
    }

    /// An HTTP client that reaches what the HTTP tools may reach (the SSRF guard after DNS and
    /// at every redirect, the configured `outbound_hosts`/`outbound_nets`): stored MCP
    /// servers' URLs are reached with it.
    ///
    /// # Errors
    /// The allow-list does not parse, or the client cannot be built, as a message.
    pub fn http_client(&self) -> Result<reqwest::Client, String> {
        self.http_config()?.guarded_client()
    }

    /// Checks a URL the server is about to reach with [`AppState::http_client`]: its scheme,
    /// and an IP literal against the SSRF guard and the outbound allow-list.
    ///
    /// # Errors
    /// Why it is refused.
    pub fn check_outbound(&self, url: &str) -> Result<(), String> {
        self.http_config()?.check_target(url)
    }

    /// The HTTP configuration the tools' context holds (built once at start-up; its client is
    /// built on first use and shared).
    fn http_config(&self) -> Result<&toolbelt_tools::HttpConfig, String> {
        self.shared
            .extensions
            .get::<toolbelt_tools::HttpConfig>()
            .ok_or_else(|| "the server has no HTTP configuration".to_owned())
    }

    /// The live registry, shared (an MCP endpoint follows its changes).
    pub fn shared_registry(&self) -> Arc<Registry> {
        self.shared.agents.shared_registry()
    }

    /// The registry that follows the store, when tools are stored.
    pub fn live(&self) -> Option<&Arc<toolbelt_store::LiveRegistry>> {
        self.shared.agents.live_registry()
    }

    /// State over an opened database: tools, agents, tokens and runs stored there, and agent
    /// tools that run agents built by this state's factory. This is what `toolbelt serve` uses.
    ///
    /// # Errors
    /// As [`AppState::new`].
    pub fn with_database(db: &Database, config: ServerConfig) -> Result<Self, StateError> {
        let store = db.live.store().clone();
        Ok(Self::from(
            Self::build(db.agent_factory(), config)?.with_store(store),
        ))
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
        Ok(Self::from(
            Self::build(AgentFactory::live(live), config)?.with_store(store),
        ))
    }

    /// The tool context of a run of `agent`: the shared extensions plus, when there is a
    /// store, the agent's memory (`memory_*` tools, scoped to the agent) and the routines
    /// (the `routine` tool; new routines run this agent unless told otherwise).
    pub fn run_extensions(&self, agent: &str) -> Extensions {
        let mut extensions = self.shared.extensions.as_ref().clone();
        if let Some(store) = &self.shared.store {
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
        Ok(Self::from(Self::build(
            AgentFactory::plain(registry),
            config,
        )?))
    }

    fn from(shared: Shared) -> Self {
        Self {
            shared: Arc::new(shared),
        }
    }

    fn build(agents: AgentFactoryBuilder, config: ServerConfig) -> Result<Shared, StateError> {
        let configured = config
            .agents
            .iter()
            .map(|def| {
                def.to_record().map_err(|source| StateError::Agent {
                    agent: def.id.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let agents = agents.configured(configured).build();
        let tokens = if config.dev {
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
        let extensions = BuiltinConfig::new(workspace)
            .with_http(http)
            .with_human(Human::new(runs.human_channel()))
            .extensions();
        Ok(Shared {
            executor: Executor::new(),
            router: agents.shared_router().clone(),
            agents,
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

impl Shared {
    /// Uses `store` for tokens and run records: only with a factory over the same store, so
    /// agents and runs never come from two databases.
    #[must_use]
    fn with_store(mut self, store: toolbelt_store::Store) -> Self {
        self.tokens = self.tokens.with_store(store.clone());
        self.runs = self.runs.with_store(store.clone());
        // The writer task ends (after a last flush) when every writer is dropped.
        let (writer, _task) = store.run_log(toolbelt_store::RunLogConfig::default());
        self.runs = self.runs.with_run_log(writer.clone());
        self.run_log = Some(writer);
        self.store = Some(store);
        self
    }
}
