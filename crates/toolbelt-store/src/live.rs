//! [`LiveRegistry`]: keeps a `toolbelt_core::Registry` equal to the store in every process.
//!
//! Compiled tools come from the process's own code; declarative, MCP and agent tools are built by
//! [`ToolFactory`] implementations other crates register. [`LiveRegistry::watch`] follows the
//! change feed: Postgres LISTEN/NOTIFY (with a slow poll as a safety net), SQLite polling of the
//! feed's newest sequence number. Every wake-up reconciles with one light SELECT and rebuilds only
//! tools whose revision moved, so lost or reordered notifications cannot leave a stale registry.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use sqlx::Row;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{Registry, ToolHandle, ToolSpec};

use crate::error::{Result, StoreError};
use crate::store::{Engine, Store};
use crate::tools::{ToolRecord, ToolSource};

/// Above this many tools to build, a reconcile reads every record at once.
const BULK_READ: usize = 16;

/// Builds a runnable tool from a stored spec and definition.
pub trait ToolFactory: Send + Sync + 'static {
    /// Builds the tool.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] naming the field of the definition at fault.
    fn build(&self, spec: &ToolSpec, definition: Option<&Value>) -> Result<ToolHandle>;
}

impl<F> ToolFactory for F
where
    F: Fn(&ToolSpec, Option<&Value>) -> Result<ToolHandle> + Send + Sync + 'static,
{
    fn build(&self, spec: &ToolSpec, definition: Option<&Value>) -> Result<ToolHandle> {
        self(spec, definition)
    }
}

/// What one reconciliation changed in the registry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reconciled {
    /// Tools added or replaced.
    pub installed: Vec<String>,
    /// Tools removed (deleted, disabled, missing).
    pub removed: Vec<String>,
    /// Tools that could not be built (no factory, or the factory refused), with the reason.
    pub failed: Vec<(String, String)>,
}

struct Installed {
    revision: i64,
    origin: &'static str,
}

/// How `tools ls` and `GET /api/v1/tools` name where a stored tool comes from: `compiled`,
/// `http`, `command` (declarative tools by their definition's kind), `agent` or `mcp`.
fn origin_of(record: &ToolRecord) -> &'static str {
    match record.source {
        ToolSource::Compiled => "compiled",
        ToolSource::Agent => "agent",
        ToolSource::Mcp => "mcp",
        ToolSource::Declarative => match record.definition.as_ref() {
            Some(d) if d.get("http").is_some() => "http",
            Some(d) if d.get("command").is_some() => "command",
            _ => "declarative",
        },
    }
}

/// A registry that follows the store. Cheap to share behind an `Arc`.
pub struct LiveRegistry {
    store: Store,
    registry: Arc<Registry>,
    compiled: HashMap<String, ToolHandle>,
    factories: HashMap<ToolSource, Arc<dyn ToolFactory>>,
    installed: Mutex<HashMap<String, Installed>>,
    reconcile_lock: tokio::sync::Mutex<()>,
    /// The change-feed sequence number read before the last successful reconcile.
    synced_seq: AtomicI64,
}

impl std::fmt::Debug for LiveRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveRegistry")
            .field("tools", &self.registry.len())
            .finish_non_exhaustive()
    }
}

/// Builds a [`LiveRegistry`].
pub struct LiveRegistryBuilder {
    store: Store,
    registry: Registry,
    compiled: HashMap<String, ToolHandle>,
    factories: HashMap<ToolSource, Arc<dyn ToolFactory>>,
}

impl LiveRegistryBuilder {
    /// The process's compiled tools (e.g. `toolbelt_core::discovered_tools()`); a stored
    /// compiled tool is served only when the process has it.
    pub fn compiled(mut self, tools: impl IntoIterator<Item = ToolHandle>) -> Self {
        for tool in tools {
            self.compiled.insert(tool.name().as_str().to_owned(), tool);
        }
        self
    }

    /// The factory for tools from `source` (declarative, MCP, agent).
    pub fn factory(mut self, source: ToolSource, factory: impl ToolFactory) -> Self {
        self.factories.insert(source, Arc::new(factory));
        self
    }

    /// Fills an existing registry (tools the store did not install are left alone).
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// Loads every stored tool into the registry.
    ///
    /// # Errors
    /// The database's error.
    pub async fn build(self) -> Result<Arc<LiveRegistry>> {
        let live = Arc::new(LiveRegistry {
            store: self.store,
            registry: Arc::new(self.registry),
            compiled: self.compiled,
            factories: self.factories,
            installed: Mutex::new(HashMap::new()),
            reconcile_lock: tokio::sync::Mutex::new(()),
            synced_seq: AtomicI64::new(-1),
        });
        live.reconcile().await?;
        Ok(live)
    }
}

impl LiveRegistry {
    /// Starts building a live registry over `store`.
    pub fn builder(store: Store) -> LiveRegistryBuilder {
        LiveRegistryBuilder {
            store,
            registry: Registry::new(),
            compiled: HashMap::new(),
            factories: HashMap::new(),
        }
    }

    /// The registry the executor and router read.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The same registry, shared (e.g. with an MCP server that follows its changes).
    pub fn shared_registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry)
    }

    /// The store behind it.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Where the installed tool `name` comes from: `compiled`, `http`, `command`, `agent` or
    /// `mcp` (`declarative` for a declarative definition of another kind); `None` for a tool
    /// this live registry did not install from the store (one an MCP client registered
    /// directly, or a name it does not hold).
    pub fn origin(&self, name: &str) -> Option<&'static str> {
        let installed = self.installed.lock().ok()?;
        installed.get(name).map(|i| i.origin)
    }

    /// Builds version `version` of `name` (for agents that pin one).
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; [`StoreError::Invalid`] when a compiled tool's pinned version is
    /// not the code this process runs, or no factory builds the tool's source.
    pub async fn tool_at(&self, name: &str, version: i64) -> Result<ToolHandle> {
        let tool = self.store.get_tool(name).await?;
        let stored = self.store.tool_version(name, version).await?;
        match tool.source {
            ToolSource::Compiled => {
                let handle = self.compiled.get(name).ok_or_else(|| {
                    StoreError::invalid(name, "this process does not have the compiled tool")
                })?;
                if crate::tools::spec_hash(handle.spec(), None) != stored.spec_hash {
                    return Err(StoreError::invalid(
                        format!("{name}@{version}"),
                        "a compiled tool runs only its current code; this version's spec differs from it",
                    ));
                }
                Ok(handle.clone())
            }
            source => self.build(source, &stored.spec, stored.definition.as_ref()),
        }
    }

    fn build(
        &self,
        source: ToolSource,
        spec: &ToolSpec,
        definition: Option<&Value>,
    ) -> Result<ToolHandle> {
        let factory = self.factories.get(&source).ok_or_else(|| {
            StoreError::invalid(
                "source",
                format!(
                    "no factory for {} tools is registered in this process",
                    source.as_str()
                ),
            )
        })?;
        factory.build(spec, definition)
    }

    /// Brings the registry in line with the store now.
    ///
    /// # Errors
    /// The database's error (the registry is left as it was).
    pub async fn reconcile(&self) -> Result<Reconciled> {
        let _one_at_a_time = self.reconcile_lock.lock().await;
        // Read the feed position first: a change committed after this point is seen by the next
        // poll even if this reconcile already picked it up.
        let seq = self.store.latest_change().await?;
        let rows = sqlx::query("SELECT name, source, enabled, missing, revision FROM tools")
            .fetch_all(self.store.pool())
            .await?;
        let mut wanted = HashMap::with_capacity(rows.len());
        for row in &rows {
            let name: String = row.try_get("name")?;
            let active =
                row.try_get::<i64, _>("enabled")? != 0 && row.try_get::<i64, _>("missing")? == 0;
            if active {
                wanted.insert(name, row.try_get::<i64, _>("revision")?);
            }
        }
        let stale: Vec<(String, bool)> = {
            let installed = self.installed.lock().map_err(|_| poisoned())?;
            let mut stale: Vec<(String, bool)> = wanted
                .iter()
                .filter(|(name, revision)| {
                    installed
                        .get(*name)
                        .is_none_or(|i| i.revision != **revision)
                })
                .map(|(name, _)| (name.clone(), true))
                .collect();
            stale.extend(
                installed
                    .keys()
                    .filter(|name| !wanted.contains_key(*name))
                    .map(|name| (name.clone(), false)),
            );
            stale
        };
        // Many tools to build (a start-up, a bulk import): one read of every record instead
        // of one round trip per tool (1,000 tools on Postgres: ~1 s of round trips).
        let installs = stale.iter().filter(|(_, install)| *install).count();
        let mut records: HashMap<String, ToolRecord> = if installs > BULK_READ {
            self.store
                .list_tools()
                .await?
                .into_iter()
                .map(|r| (r.name.clone(), r))
                .collect()
        } else {
            HashMap::new()
        };
        let mut report = Reconciled::default();
        for (name, install) in stale {
            if !install {
                if self.registry.remove(&name).is_ok() {
                    report.removed.push(name.clone());
                }
                self.installed.lock().map_err(|_| poisoned())?.remove(&name);
                continue;
            }
            let record = match records.remove(&name) {
                Some(record) => record,
                None => match self.store.get_tool(&name).await {
                    Ok(record) => record,
                    Err(StoreError::NotFound { .. }) => continue,
                    Err(e) => return Err(e),
                },
            };
            let built = match record.source {
                ToolSource::Compiled => self.compiled.get(&name).cloned().ok_or_else(|| {
                    StoreError::invalid("source", "compiled into another process, not this one")
                }),
                source => self.build(source, &record.spec, record.definition.as_ref()),
            };
            match built {
                Ok(handle) => match self.registry.replace(handle) {
                    Ok(_) => {
                        report.installed.push(name.clone());
                        self.installed.lock().map_err(|_| poisoned())?.insert(
                            name,
                            Installed {
                                revision: record.revision,
                                origin: origin_of(&record),
                            },
                        );
                    }
                    Err(e) => report.failed.push((name, e.to_string())),
                },
                Err(e) => {
                    tracing::warn!(tool = %name, error = %e, "live registry: tool not built");
                    report.failed.push((name.clone(), e.to_string()));
                    // Remember the revision so a broken definition is not rebuilt on every
                    // wake-up; an older handle of it is removed.
                    if self.registry.contains(&name)
                        && self
                            .installed
                            .lock()
                            .map_err(|_| poisoned())?
                            .contains_key(&name)
                    {
                        let _ = self.registry.remove(&name);
                    }
                    self.installed.lock().map_err(|_| poisoned())?.insert(
                        name,
                        Installed {
                            revision: record.revision,
                            origin: origin_of(&record),
                        },
                    );
                }
            }
        }
        self.synced_seq.store(seq, Ordering::SeqCst);
        Ok(report)
    }

    /// Follows the store until the returned handle is stopped or dropped: Postgres
    /// LISTEN/NOTIFY (plus a poll every `poll_interval * 10` as a safety net), SQLite polling
    /// every `poll_interval`.
    pub fn watch(self: &Arc<Self>, poll_interval: Duration) -> WatchHandle {
        let cancel = CancellationToken::new();
        let live = Arc::clone(self);
        let token = cancel.clone();
        let handle = tokio::spawn(async move {
            match live.store.engine() {
                Engine::Postgres => live.listen_loop(poll_interval, token).await,
                Engine::Sqlite => live.poll_loop(poll_interval, token).await,
            }
        });
        WatchHandle {
            cancel,
            handle: Some(handle),
        }
    }

    async fn poll_loop(&self, interval: Duration, cancel: CancellationToken) {
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(interval) => {}
            }
            match self.store.latest_change().await {
                Ok(latest) if latest != self.synced_seq.load(Ordering::SeqCst) => {
                    if let Err(error) = self.reconcile().await {
                        tracing::warn!(%error, "live registry: reconcile failed");
                    }
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "live registry: poll failed"),
            }
        }
    }

    async fn listen_loop(&self, interval: Duration, cancel: CancellationToken) {
        let safety_net = interval.saturating_mul(10);
        loop {
            let mut listener = match sqlx::postgres::PgListener::connect(self.store.url()).await {
                Ok(listener) => listener,
                Err(error) => {
                    tracing::warn!(%error, "live registry: LISTEN connection failed; polling");
                    tokio::select! {
                        () = cancel.cancelled() => return,
                        () = tokio::time::sleep(interval) => {}
                    }
                    let _ = self.reconcile().await;
                    continue;
                }
            };
            if let Err(error) = listener.listen("toolbelt_changes").await {
                tracing::warn!(%error, "live registry: LISTEN failed");
                continue;
            }
            // Changes made while (re)connecting are caught by this reconcile.
            let _ = self.reconcile().await;
            loop {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    received = listener.try_recv() => match received {
                        Ok(Some(_)) => {
                            while let Some(_more) = listener.next_buffered() {}
                            if let Err(error) = self.reconcile().await {
                                tracing::warn!(%error, "live registry: reconcile failed");
                            }
                        }
                        // The connection dropped: reconnect, then reconcile.
                        Ok(None) | Err(_) => break,
                    },
                    () = tokio::time::sleep(safety_net) => {
                        let _ = self.reconcile().await;
                    }
                }
            }
        }
    }
}

fn poisoned() -> StoreError {
    StoreError::invalid("live registry", "internal state lock poisoned by a panic")
}

/// Stops the watcher when stopped or dropped.
#[derive(Debug)]
pub struct WatchHandle {
    cancel: CancellationToken,
    handle: Option<JoinHandle<()>>,
}

impl WatchHandle {
    /// Stops watching and waits for the watcher to end.
    pub async fn stop(mut self) {
        self.cancel.cancel();
        if let Some(handle) = self.handle.take() {
            let _ = handle.await;
        }
    }
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}
