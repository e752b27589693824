//! [`Host`]: the agents, runs and tools a front-end serves, and the background tasks that
//! keep them going (the routine loop, learning from the run log, loading the encoder, the
//! stored MCP servers' supervision), stopped together.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolbelt_core::{BoxFuture, Executor, Registry};
use toolbelt_router::{AnyRouter, EmbeddingRouter, LearnConfig, LearnedUsage, RunLog};
use toolbelt_store::{ClaimConfig, RoutineClaims, RunLogConfig, RunLogWriter, Store};

use crate::mcp_servers::{McpServers, McpSupervision};
use crate::routines::{AgentRoutineRunner, RunExtensions, Scheduler};
use crate::runs::RunRegistry;
use crate::{AgentFactory, EncoderRole, StoreRunLog};

/// Builds a [`Host`] over an agent factory.
#[must_use]
pub struct HostBuilder {
    agents: AgentFactory,
    runs: RunRegistry,
    store: Option<Store>,
    mcp: Option<McpSupervision>,
}

impl std::fmt::Debug for HostBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuilder")
            .field("store", &self.store.is_some())
            .finish_non_exhaustive()
    }
}

impl HostBuilder {
    /// A host over `agents`, with a fresh run registry and no store.
    pub fn new(agents: AgentFactory) -> Self {
        Self {
            agents,
            runs: RunRegistry::new(),
            store: None,
            mcp: None,
        }
    }

    /// Uses `runs` (a registry with its observer, or whose question channel the caller's
    /// tools already hold) instead of a fresh one.
    pub fn runs(mut self, runs: RunRegistry) -> Self {
        self.runs = runs;
        self
    }

    /// Keeps run records and the run log in `store`: only with a factory over the same store,
    /// so agents and runs never come from two databases.
    pub fn store(mut self, store: Store) -> Self {
        self.store = Some(store);
        self
    }

    /// Supervises the MCP servers stored in the host's store as `settings` say (ignored
    /// without a store); they connect once [`Host::start_mcp_servers`] is called.
    pub fn mcp_servers(mut self, settings: McpSupervision) -> Self {
        self.mcp = Some(settings);
        self
    }

    /// The host. With a store, it starts the run log's writer task (it ends, after a last
    /// flush, when every writer is dropped); no other task starts before
    /// [`Host::start_routines`], [`Host::start_learning`] or [`Host::start_mcp_servers`].
    pub fn build(self) -> Host {
        let Self {
            agents,
            mut runs,
            store,
            mcp,
        } = self;
        let mut run_log = None;
        if let Some(store) = &store {
            runs = runs.with_store(store.clone());
            let (writer, _task) = store.run_log().writer(RunLogConfig::default());
            runs = runs.with_run_log(writer.clone());
            run_log = Some(writer);
        }
        let mcp_servers = store
            .clone()
            .zip(mcp)
            .map(|(store, settings)| McpServers::new(store, agents.shared_registry(), settings));
        Host {
            mcp_servers,
            agents,
            executor: Executor::new(),
            runs,
            store,
            run_log,
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
        }
    }
}

/// The agents, the runs, the executor of direct tool calls and the background tasks of one
/// server (or any front-end that runs agents for long).
pub struct Host {
    agents: AgentFactory,
    executor: Executor,
    runs: RunRegistry,
    store: Option<Store>,
    run_log: Option<RunLogWriter>,
    mcp_servers: Option<McpServers>,
    shutdown: CancellationToken,
    tasks: TaskTracker,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("tools", &self.agents.registry().len())
            .field("store", &self.store.is_some())
            .field("tasks", &self.tasks.len())
            .finish_non_exhaustive()
    }
}

/// Loads an encoder [`Host::start_encoder`] puts in one of the router's slots (a model
/// loaded on the blocking pool, its tool vectors read from a cache).
pub type EncoderLoad =
    BoxFuture<'static, Result<EmbeddingRouter, Box<dyn std::error::Error + Send + Sync>>>;

/// How [`Host::start_learning`] learns from the run log.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LearnSettings {
    /// Age at which a learned request counts half, in days (default 30).
    pub half_life_days: u64,
    /// How often the run log is read again (default 10 minutes).
    pub refresh: Duration,
}

impl Default for LearnSettings {
    fn default() -> Self {
        Self {
            half_life_days: 30,
            refresh: Duration::from_secs(600),
        }
    }
}

impl LearnSettings {
    /// Sets the half-life, in days.
    #[must_use]
    pub fn with_half_life_days(mut self, days: u64) -> Self {
        self.half_life_days = days;
        self
    }

    /// Sets how often the run log is read again (at least every second).
    #[must_use]
    pub fn with_refresh(mut self, every: Duration) -> Self {
        self.refresh = every.max(Duration::from_secs(1));
        self
    }
}

impl Host {
    /// A builder of a host over `agents`.
    pub fn builder(agents: AgentFactory) -> HostBuilder {
        HostBuilder::new(agents)
    }

    /// The agents, configured and stored, and the tools they are built over.
    pub fn agents(&self) -> &AgentFactory {
        &self.agents
    }

    /// Runs direct tool calls.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The agents' shared base router.
    pub fn router(&self) -> &AnyRouter {
        self.agents.shared_router()
    }

    /// The live registry: what calls, routing and agents see.
    pub fn registry(&self) -> &Registry {
        self.agents.registry()
    }

    /// The runs.
    pub fn runs(&self) -> &RunRegistry {
        &self.runs
    }

    /// The database, when the host has one.
    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// The audit log of tool calls and runs (batched writes to the store), when there is a
    /// store.
    pub fn run_log(&self) -> Option<&RunLogWriter> {
        self.run_log.as_ref()
    }

    /// The supervisor of the MCP servers stored in the host's store, when the host has a
    /// store and was built with [`HostBuilder::mcp_servers`].
    pub fn mcp_servers(&self) -> Option<&McpServers> {
        self.mcp_servers.as_ref()
    }

    /// Cancelled when the host begins to shut down: its background tasks end, and a
    /// front-end may end what it streams.
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Starts the routine loop on the host's store as instance `instance` (on Postgres
    /// several instances share the work, each occurrence claimed by exactly one), running
    /// each due routine as a run of the host's registry with the tool context `extensions`
    /// gives. Returns `false`, starting nothing, when the host has no store.
    pub fn start_routines(&self, instance: impl Into<String>, extensions: RunExtensions) -> bool {
        let Some(store) = self.store.clone() else {
            return false;
        };
        let runner = AgentRoutineRunner::new(self.agents.clone(), self.runs.clone(), extensions);
        let claims =
            RoutineClaims::new(store).with_config(ClaimConfig::default().with_instance(instance));
        let scheduler = Scheduler::new(claims, Arc::new(runner));
        let cancel = self.shutdown.clone();
        self.tasks.spawn(async move { scheduler.run(cancel).await });
        true
    }

    /// Connects the MCP servers stored in the host's store and follows the store (every
    /// [`crate::mcp_servers::POLL`]) in a task of the host; shutdown stops every client, their
    /// tools leaving the registry. Returns `false`, starting nothing, without a supervisor
    /// ([`Host::mcp_servers`]).
    pub fn start_mcp_servers(&self) -> bool {
        let Some(servers) = self.mcp_servers.clone() else {
            return false;
        };
        self.tasks.spawn(servers.follow(self.shutdown.clone()));
        true
    }

    /// Starts learning from use: reads the host's run log once before returning (so the
    /// first request already routes with it), then again every `settings.refresh` in a task
    /// of the host. Returns `false`, starting nothing, when the host has no store. A failed
    /// read is logged; routing goes on with what was learned before.
    pub async fn start_learning(&self, settings: LearnSettings) -> bool {
        let Some(store) = self.store.clone() else {
            tracing::warn!("learn_from_runs needs a database: the router does not learn");
            return false;
        };
        let log = StoreRunLog::new(store);
        let days = settings.half_life_days;
        let cfg = LearnConfig::default().with_half_life(days.saturating_mul(24 * 3600));
        let every = settings.refresh.max(Duration::from_secs(1));
        let mut learned = refresh(&self.agents, &log, &cfg, None).await;
        match &learned {
            Some(usage) => tracing::info!(
                examples = usage.len(),
                tools = usage.tools(),
                half_life_days = days,
                refresh_secs = every.as_secs(),
                "router: learning from the run log is on"
            ),
            None => tracing::warn!(
                half_life_days = days,
                refresh_secs = every.as_secs(),
                "router: learning from the run log is on, but the first read failed"
            ),
        }
        let agents = self.agents.clone();
        let shutdown = self.shutdown.clone();
        self.tasks.spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    _ = tick.tick() => {
                        if let Some(usage) = refresh(&agents, &log, &cfg, learned.as_ref()).await {
                            learned = Some(usage);
                        }
                    }
                }
            }
        });
        true
    }

    /// Starts loading an encoder with `load` in a task of the host, then embeds the
    /// registry's tools with it and puts it in the agents' slot for `role`: from then on the
    /// base router and every agent rank with it too. A failure is logged and routing goes on
    /// without it (by words when no encoder loads); shutdown ends the task even while it loads.
    pub fn start_encoder(&self, role: EncoderRole, load: EncoderLoad) {
        let agents = self.agents.clone();
        let shutdown = self.shutdown.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                () = shutdown.cancelled() => {}
                () = attach_encoder(role, load, &agents) => {}
            }
        });
    }

    /// Cancels the shutdown token and waits until the host's background tasks have ended.
    /// Routine runs the loop had started go on until they end.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}

/// Loads an encoder, embeds the registry's tools (read from the vector cache when there)
/// and fills the agents' slot for `role`; a failure is logged.
async fn attach_encoder(role: EncoderRole, load: EncoderLoad, agents: &AgentFactory) {
    let started = std::time::Instant::now();
    let role_name = role.as_str();
    let router = match load.await {
        Ok(router) => router,
        Err(e) => {
            tracing::warn!(role = role_name, error = %chain(e.as_ref()), "router: an encoder could not be loaded; routing without it");
            return;
        }
    };
    let tools = agents.registry().all();
    if let Err(e) = router.prepare(&tools).await {
        tracing::warn!(role = role_name, error = %e, "router: embedding the tools failed; routing without this encoder");
        return;
    }
    let embedded = router.computed();
    let model = router.model().to_owned();
    if agents.encoder_slot(role).fill(router).is_ok() {
        tracing::info!(
            role = role_name,
            model,
            tools = tools.len(),
            embedded,
            ms = started.elapsed().as_millis() as u64,
            "router: encoder ready"
        );
    }
}

/// An error and its sources, `outer: inner: …`.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// Reads the log and gives the router what it teaches when that changed; the usage read, or
/// `None` when the log could not be read.
async fn refresh(
    agents: &AgentFactory,
    log: &impl RunLog,
    cfg: &LearnConfig,
    before: Option<&LearnedUsage>,
) -> Option<LearnedUsage> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let usage = match LearnedUsage::from_run_log(log, now, cfg).await {
        Ok(usage) => usage,
        Err(error) => {
            tracing::warn!(%error, "router: the run log could not be read; learned usage kept");
            return None;
        }
    };
    // An unchanged usage keeps the index as it is (a new one re-indexes every tool).
    if before != Some(&usage) {
        tracing::debug!(
            examples = usage.len(),
            tools = usage.tools(),
            "router: learned usage refreshed"
        );
        agents.set_learned_usage(Some(usage.clone()));
    }
    Some(usage)
}
