//! Opening the database a process serves stored tools from: migrations, compiled tools, and
//! the live registry with every tool factory registered.

use std::sync::Arc;
use std::time::Duration;

use toolbelt_core::ToolHandle;
use toolbelt_store::{LiveRegistry, Store, StoreError, StoreOptions, ToolSource, WatchHandle};
use toolbelt_tools::declarative::Secrets;

use crate::agents::{AgentFactory, AgentFactoryBuilder};
use crate::factories::{AgentToolFactory, declarative_factory};

/// How often a SQLite instance looks for changes made by other processes (Postgres is notified).
pub const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// A store and the registry loaded from it; [`Database::watch`] keeps the registry current.
#[derive(Debug)]
#[non_exhaustive]
pub struct Database {
    /// The live registry (its store is [`LiveRegistry::store`]).
    pub live: Arc<LiveRegistry>,
    /// Runs marked `interrupted` at start-up (SQLite only: they were going when the server stopped).
    pub interrupted: u64,
    /// The registry's factory for agent tools, attached by [`Database::agent_factory`].
    pub agent_tools: AgentToolFactory,
    /// The secrets declarative tools were built with.
    pub secrets: Secrets,
}

impl Database {
    /// An [`AgentFactory`] over this database's tools, wired to its agent tools and secrets.
    pub fn agent_factory(&self) -> AgentFactoryBuilder {
        AgentFactory::live(self.live.clone())
            .secrets(self.secrets.clone())
            .agent_tools(&self.agent_tools)
    }

    /// Lets the pool grow past the one start-up connection ([`open`] starts with one on
    /// Postgres), then starts following the store's changes (Postgres: LISTEN on a connection
    /// of its own; SQLite: polling every [`POLL_INTERVAL`]); stops when the handle is stopped
    /// or dropped.
    ///
    /// A server calls it once it listens, so start-up negotiates TLS once. Changes made in
    /// between are caught by the reconcile the watcher runs when it starts.
    ///
    /// # Errors
    /// The store's error when the pool cannot be widened.
    pub fn watch(&self) -> Result<WatchHandle, StoreError> {
        self.live.store().widen_pool()?;
        Ok(self.live.watch(POLL_INTERVAL))
    }
}

/// Opens `url` (migrating it), syncs the `compiled` tools into it, marks runs a stopped
/// server left unfinished as interrupted, and loads every stored tool into a live registry
/// (declarative tools built with the declared secrets, [`Secrets::from_env`]; agent tools
/// through [`Database::agent_factory`]), one statement after the other on one connection (on
/// Postgres the pool holds one until [`Database::watch`]).
///
/// # Errors
/// The store's error (unreachable database, newer schema, invalid compiled spec).
pub async fn open(url: &str, compiled: Vec<ToolHandle>, by: &str) -> Result<Database, StoreError> {
    let options = StoreOptions::default().with_single_connection_start(true);
    let store = Store::open_with(url, options).await?;
    open_store(store, compiled, by, Secrets::from_env()).await
}

/// [`open`] on a store already opened (tests open one per Postgres schema), with `secrets`.
///
/// # Errors
/// As [`open`].
pub async fn open_store(
    store: Store,
    compiled: Vec<ToolHandle>,
    by: &str,
    secrets: Secrets,
) -> Result<Database, StoreError> {
    // With SQLite one server owns the database, so an unfinished run was left by a stopped
    // server. On Postgres other instances may be running theirs right now: leave them alone.
    let interrupted = match store.engine() {
        toolbelt_store::Engine::Sqlite => store.runs().interrupt_unfinished().await?,
        _ => 0,
    };
    load(store, compiled, by, secrets)
        .await
        .map(|db| Database { interrupted, ..db })
}

/// Syncs the `compiled` tools into `store` and loads every stored tool into a live registry,
/// without touching runs: for a process that uses the database beside a server (a CLI running
/// a stored agent), where [`open_store`] would mark the server's runs interrupted.
///
/// # Errors
/// As [`open`].
pub async fn load(
    store: Store,
    compiled: Vec<ToolHandle>,
    by: &str,
    secrets: Secrets,
) -> Result<Database, StoreError> {
    let specs: Vec<_> = compiled.iter().map(|t| t.spec().clone()).collect();
    store.tools().sync_compiled(&specs, by).await?;
    let agent_tools = AgentToolFactory::new();
    let live = LiveRegistry::builder(store)
        .compiled(compiled)
        .factory(
            ToolSource::Declarative,
            declarative_factory(secrets.clone()),
        )
        .factory(ToolSource::Agent, agent_tools.clone())
        .build()
        .await?;
    Ok(Database {
        live,
        interrupted: 0,
        agent_tools,
        secrets,
    })
}
