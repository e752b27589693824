//! Opening the database a server runs on: migrations, compiled tools, the live registry.

use std::sync::Arc;
use std::time::Duration;

use toolbelt_core::ToolHandle;
use toolbelt_store::{LiveRegistry, Store, StoreError, StoreOptions, ToolSource, WatchHandle};
use toolbelt_tools::declarative::{Definition, Secrets};

/// How often a SQLite instance looks for changes made by other processes (Postgres is notified).
pub const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// A store and the registry loaded from it; [`Database::watch`] keeps the registry current.
#[derive(Debug)]
pub struct Database {
    /// The live registry (its store is [`LiveRegistry::store`]).
    pub live: Arc<LiveRegistry>,
    /// Runs marked `interrupted` at start-up (SQLite only: they were going when the server stopped).
    pub interrupted: u64,
}

impl Database {
    /// Lets the pool grow past the one start-up connection ([`open`] starts with one on
    /// Postgres), then starts following the store's changes (Postgres: LISTEN on a connection
    /// of its own; SQLite: polling every [`POLL_INTERVAL`]); stops when the handle is stopped
    /// or dropped.
    ///
    /// `toolbelt serve` calls it once it listens, so start-up negotiates TLS once. Changes
    /// made in between are caught by the reconcile the watcher runs when it starts.
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
/// (declarative tools built with secrets from the environment), one statement after the
/// other on one connection (on Postgres the pool holds one until [`Database::watch`], which
/// then follows later changes).
///
/// # Errors
/// The store's error (unreachable database, newer schema, invalid compiled spec).
pub async fn open(url: &str, compiled: Vec<ToolHandle>, by: &str) -> Result<Database, StoreError> {
    let options = StoreOptions::default().with_single_connection_start(true);
    let store = Store::open_with(url, options).await?;
    open_store(store, compiled, by).await
}

/// [`open`] on a store already opened (tests open one per Postgres schema).
///
/// # Errors
/// As [`open`].
pub async fn open_store(
    store: Store,
    compiled: Vec<ToolHandle>,
    by: &str,
) -> Result<Database, StoreError> {
    let specs: Vec<_> = compiled.iter().map(|t| t.spec().clone()).collect();
    store.sync_compiled(&specs, by).await?;
    // With SQLite one server owns the database, so an unfinished run was left by a stopped
    // server. On Postgres other instances may be running theirs right now: leave them alone.
    let interrupted = match store.engine() {
        toolbelt_store::Engine::Sqlite => store.interrupt_unfinished_runs().await?,
        _ => 0,
    };
    let secrets = Secrets::from_env();
    let live = LiveRegistry::builder(store)
        .compiled(compiled)
        .factory(
            ToolSource::Declarative,
            move |spec: &toolbelt_core::ToolSpec, definition: Option<&serde_json::Value>| {
                let definition = definition.ok_or_else(|| StoreError::Invalid {
                    field: "definition".to_owned(),
                    reason: "missing".to_owned(),
                })?;
                Definition::from_value(definition)
                    .and_then(|d| d.build(spec.clone(), secrets.clone()))
                    .map_err(|e| StoreError::Invalid {
                        field: e.field,
                        reason: e.reason,
                    })
            },
        )
        .build()
        .await?;
    Ok(Database { live, interrupted })
}
