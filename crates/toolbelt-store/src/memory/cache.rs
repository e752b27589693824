//! [`MemoryCache`]: per-agent in-process BM25 indexes of the entries an agent can read,
//! kept current with the database by one version lookup per recall (ADR 0028).
//!
//! The database stays the truth: every write goes there first, and a recall first reads the
//! `memory_version` row. New writes since the index was built are read by id (rows above the
//! last id the index holds: memory writes are serialised, so ids become visible in order);
//! a delete anywhere rebuilds the index from the database.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};
use toolbelt_core::Embedder;
use toolbelt_persist::{MemoryEntry, MemoryIndex, QuantizedVector};

use crate::error::StoreError;

/// The columns of a memory entry, as [`decode`] reads them.
pub(super) const COLUMNS: &str =
    "m.id, m.agent, m.user_id, m.text, m.tags, m.importance, m.shared, m.created_at";

/// A memory entry from a row of [`COLUMNS`].
pub(super) fn decode(row: &AnyRow) -> Result<MemoryEntry, sqlx::Error> {
    let user: String = row.try_get("user_id")?;
    let tags: String = row.try_get("tags")?;
    let importance: i64 = row.try_get("importance")?;
    Ok(MemoryEntry::new(
        row.try_get("id")?,
        row.try_get("agent")?,
        (!user.is_empty()).then_some(user),
        row.try_get("text")?,
        tags.split(',')
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
        u8::try_from(importance).unwrap_or(3),
        row.try_get::<i64, _>("shared")? != 0,
        row.try_get("created_at")?,
    ))
}

/// How many agents' indexes one store keeps; the least recently used goes first.
const MAX_AGENTS: usize = 64;

/// An agent's index and the database version it reflects.
struct AgentIndex {
    index: MemoryIndex,
    writes: i64,
    deletes: i64,
    max_id: i64,
    /// The model whose vectors the index holds (`None`: words only).
    model: Option<String>,
}

#[derive(Default)]
struct Slot {
    state: tokio::sync::Mutex<Option<AgentIndex>>,
    used: std::sync::atomic::AtomicU64,
}

/// The indexes of one store, shared by every clone of it.
#[derive(Default)]
pub(crate) struct MemoryCache {
    agents: Mutex<HashMap<String, Arc<Slot>>>,
    clock: std::sync::atomic::AtomicU64,
    embedder: std::sync::RwLock<Option<Arc<dyn Embedder>>>,
}

impl std::fmt::Debug for MemoryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self
            .agents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("MemoryCache").field("agents", &n).finish()
    }
}

impl MemoryCache {
    pub(crate) fn embedder(&self) -> Option<Arc<dyn Embedder>> {
        self.embedder
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set_embedder(&self, embedder: Arc<dyn Embedder>) {
        *self
            .embedder
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(embedder);
    }

    fn slot(&self, agent: &str) -> Arc<Slot> {
        let tick = self
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut agents = self.agents.lock().unwrap_or_else(PoisonError::into_inner);
        if !agents.contains_key(agent) && agents.len() >= MAX_AGENTS {
            let oldest = agents
                .iter()
                .min_by_key(|(_, s)| s.used.load(std::sync::atomic::Ordering::Relaxed))
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                agents.remove(&k);
            }
        }
        let slot = Arc::clone(agents.entry(agent.to_owned()).or_default());
        slot.used.store(tick, std::sync::atomic::Ordering::Relaxed);
        slot
    }

    /// Runs `f` on `agent`'s index, brought up to date with the database behind `pool` first, holding the
    /// vectors of `model`; the index stays locked for this agent until `f` has finished.
    pub(crate) async fn with_index<T>(
        &self,
        pool: &AnyPool,
        agent: &str,
        model: Option<&str>,
        f: impl AsyncFnOnce(&MemoryIndex) -> T,
    ) -> Result<T, StoreError> {
        let slot = self.slot(agent);
        let mut state = slot.state.lock().await;
        let row = sqlx::query("SELECT writes, deletes FROM memory_version WHERE id = 1")
            .fetch_one(pool)
            .await?;
        let (writes, deletes): (i64, i64) = (row.try_get("writes")?, row.try_get("deletes")?);
        match state.as_mut() {
            Some(current) if current.deletes == deletes && current.model.as_deref() == model => {
                if current.writes != writes {
                    let rows = rows_of(pool, agent, current.max_id).await?;
                    for row in &rows {
                        let entry = decode(row)?;
                        current.max_id = current.max_id.max(entry.id);
                        current
                            .index
                            .insert_entry_with_vector(entry, vector_of(row, model)?.as_ref());
                    }
                    current.writes = writes;
                }
            }
            _ => {
                let index = MemoryIndex::new();
                let mut max_id = 0;
                for row in &rows_of(pool, agent, 0).await? {
                    let entry = decode(row)?;
                    max_id = max_id.max(entry.id);
                    index.insert_entry_with_vector(entry, vector_of(row, model)?.as_ref());
                }
                *state = Some(AgentIndex {
                    index,
                    writes,
                    deletes,
                    max_id,
                    model: model.map(str::to_owned),
                });
            }
        }
        let current = state
            .as_ref()
            .ok_or_else(|| StoreError::invalid("memory", "index missing"))?;
        Ok(f(&current.index).await)
    }
}

/// The row's vector when `model` made it.
fn vector_of(
    row: &sqlx::any::AnyRow,
    model: Option<&str>,
) -> Result<Option<QuantizedVector>, StoreError> {
    let Some(model) = model else {
        return Ok(None);
    };
    let made_by: Option<String> = row.try_get("embedding_model")?;
    if made_by.as_deref() != Some(model) {
        return Ok(None);
    }
    let bytes: Option<Vec<u8>> = row.try_get("embedding")?;
    Ok(bytes.as_deref().and_then(QuantizedVector::from_bytes))
}

/// The entries `agent` can read (its own and shared ones, every user) above `after`.
async fn rows_of(
    pool: &AnyPool,
    agent: &str,
    after: i64,
) -> Result<Vec<sqlx::any::AnyRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS}, m.embedding, m.embedding_model FROM memories m WHERE m.id > $1 AND (m.agent = $2 OR m.shared = 1) ORDER BY m.id"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(after)
        .bind(agent)
        .fetch_all(pool)
        .await
}
