//! [`LiveRegistry`]: keeps a `toolbelt_core::Registry` equal to the store in every process.
//!
//! Compiled tools come from the process's own code; declarative, MCP and agent tools are built by
//! [`ToolFactory`] implementations other crates register. [`LiveRegistry::watch`] follows the
//! change feed: Postgres LISTEN/NOTIFY (with a slow poll as a safety net), SQLite polling of the
//! feed. A wake-up reads the tools the new changes name and rebuilds those whose revision moved
//! ([`LiveRegistry::refresh`]), so following a change costs the same whatever the catalog holds
//! (ADR 0057); start-up, a reconnection, the safety net, a bulk sync and a backlog longer than
//! one read compare every tool's revision ([`LiveRegistry::reconcile`]), so a lost notification
//! cannot leave a stale registry for long.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use sqlx::Row;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{Registry, ToolHandle, ToolSpec};

use crate::changes::Change;
use crate::error::{Result, StoreError};
use crate::store::{Engine, Store};
use crate::stored::Stored;
use crate::tools::{ToolEntry, ToolSource};

/// Above this many tools to build, a reconcile reads their records in one statement.
const BULK_READ: usize = 16;

/// How many changes one poll of the feed reads; a longer backlog is caught up by a
/// whole-table reconcile instead.
const FEED_BATCH: i64 = 1000;

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
fn origin_of(record: &ToolEntry) -> &'static str {
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
        let tool = self.store.tools().get(name).await?;
        let stored = self.store.tools().version(name, version).await?;
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

    /// Brings the registry in line with the store now: reads the state of every stored tool
    /// (one light SELECT) and rebuilds those whose revision moved.
    ///
    /// This costs a row per stored tool; after a change whose tools are known, [`refresh`]
    /// costs a row per changed tool.
    ///
    /// # Errors
    /// The database's error (the registry is left as it was).
    ///
    /// [`refresh`]: LiveRegistry::refresh
    pub async fn reconcile(&self) -> Result<Reconciled> {
        let _one_at_a_time = self.reconcile_lock.lock().await;
        // Read the feed position first: a change committed after this point is seen by the next
        // poll even if this reconcile already picked it up.
        let seq = self.store.changes().latest().await?;
        let rows = sqlx::query("SELECT name, source, enabled, missing, revision FROM tools")
            .fetch_all(self.store.pool())
            .await?;
        let report = self.apply_states(&rows, None).await?;
        self.synced_seq.fetch_max(seq, Ordering::SeqCst);
        Ok(report)
    }

    /// Brings the tools named `names` in line with the store: reads only their rows, then
    /// installs, replaces or removes each as [`reconcile`] would. Its cost follows the number
    /// of names, not the size of the catalog: a server calls it after each write it makes, and
    /// the watcher for the tools the change feed names.
    ///
    /// # Errors
    /// The database's error (the registry is left as it was).
    ///
    /// [`reconcile`]: LiveRegistry::reconcile
    pub async fn refresh<S: AsRef<str>>(
        &self,
        names: impl IntoIterator<Item = S>,
    ) -> Result<Reconciled> {
        let mut names: Vec<String> = names.into_iter().map(|n| n.as_ref().to_owned()).collect();
        names.sort_unstable();
        names.dedup();
        if names.is_empty() {
            return Ok(Reconciled::default());
        }
        let _one_at_a_time = self.reconcile_lock.lock().await;
        let mut rows = Vec::with_capacity(names.len());
        for chunk in names.chunks(crate::tools::IN_LIST_CHUNK) {
            let sql = format!(
                "SELECT name, source, enabled, missing, revision FROM tools WHERE name IN ({})",
                crate::tools::placeholders(chunk.len())
            );
            // Only numbered placeholders are formatted in; the names are bound.
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for name in chunk {
                query = query.bind(name.as_str());
            }
            rows.extend(query.fetch_all(self.store.pool()).await?);
        }
        self.apply_states(&rows, Some(&names)).await
    }

    /// Rebuilds the tools of `rows` (name, enabled, missing, revision) whose revision moved, and removes the
    /// installed tools that are no longer active: among `scope` when given (the names the rows
    /// were read for), else every installed tool (the rows are the whole table). The caller
    /// holds `reconcile_lock`.
    async fn apply_states(
        &self,
        rows: &[sqlx::any::AnyRow],
        scope: Option<&[String]>,
    ) -> Result<Reconciled> {
        let mut wanted = HashMap::with_capacity(rows.len());
        for row in rows {
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
            match scope {
                Some(names) => stale.extend(
                    names
                        .iter()
                        .filter(|name| installed.contains_key(*name) && !wanted.contains_key(*name))
                        .map(|name| (name.clone(), false)),
                ),
                None => stale.extend(
                    installed
                        .keys()
                        .filter(|name| !wanted.contains_key(*name))
                        .map(|name| (name.clone(), false)),
                ),
            }
            stale
        };
        // Many tools to build (a start-up, a bulk import): one read of their records instead
        // of one round trip per tool (1,000 tools on Postgres: ~1 s of round trips). A whole
        // table pass reads every record; a pass over named tools reads just those.
        let to_build: Vec<String> = stale
            .iter()
            .filter(|(_, install)| *install)
            .map(|(name, _)| name.clone())
            .collect();
        let mut records: HashMap<String, Stored<ToolEntry>> = if to_build.len() <= BULK_READ {
            HashMap::new()
        } else {
            let records = match scope {
                None => self.store.tools().list().await?,
                Some(_) => self.store.tools().named(&to_build).await?,
            };
            records
                .into_iter()
                .map(|r| (r.name().to_owned(), r))
                .collect()
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
                None => match self.store.tools().get(&name).await {
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
        Ok(report)
    }

    /// Applies changes read from the feed: refreshes the tools they name, or reconciles the
    /// whole table when one of them is a bulk sync (`*`) or when `complete` is false (the feed
    /// held more than was read, or a notified change could not be found).
    async fn follow(&self, changes: &[Change], complete: bool) -> Result<()> {
        let bulk = changes.iter().any(|c| c.entity == "tool" && c.name == "*");
        if bulk || !complete {
            self.reconcile().await?;
            return Ok(());
        }
        let names = changes
            .iter()
            .filter(|c| c.entity == "tool")
            .map(|c| c.name.as_str());
        self.refresh(names).await?;
        if let Some(last) = changes.iter().map(|c| c.seq).max() {
            self.synced_seq.fetch_max(last, Ordering::SeqCst);
        }
        Ok(())
    }

    /// One poll of the feed (SQLite): the changes after the last one followed, applied.
    /// SQLite writers take turns, so changes commit in the order of their numbers and none can
    /// appear later below the last one read.
    async fn poll_once(&self) -> Result<()> {
        let after = self.synced_seq.load(Ordering::SeqCst);
        let changes = self.store.changes().since(after, FEED_BATCH).await?;
        if changes.is_empty() {
            return Ok(());
        }
        let complete = changes.len() < usize::try_from(FEED_BATCH).unwrap_or(usize::MAX);
        self.follow(&changes, complete).await
    }

    /// Applies Postgres notifications: each payload is the number of a committed change (its
    /// transaction may have committed after others numbered higher, which is why the numbers
    /// notified are read, not a range after the last one). A payload that is not a number, or
    /// a number not found, falls back to a whole-table reconcile.
    async fn follow_notified(&self, payloads: &[String]) -> Result<()> {
        let seqs: Option<Vec<i64>> = payloads.iter().map(|p| p.trim().parse().ok()).collect();
        let Some(seqs) = seqs else {
            self.reconcile().await?;
            return Ok(());
        };
        let changes = self.store.changes().numbered(&seqs).await?;
        let complete = changes.len() == seqs.len();
        self.follow(&changes, complete).await
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
            if let Err(error) = self.poll_once().await {
                tracing::warn!(%error, "live registry: following the change feed failed");
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
                        Ok(Some(first)) => {
                            let mut payloads = vec![first.payload().to_owned()];
                            while let Some(more) = listener.next_buffered() {
                                payloads.push(more.payload().to_owned());
                            }
                            if let Err(error) = self.follow_notified(&payloads).await {
                                tracing::warn!(%error, "live registry: following a change failed");
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
