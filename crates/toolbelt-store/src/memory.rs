//! [`StoreMemory`]: the memory tools' [`MemoryStore`] in SQLite or Postgres.
//!
//! The database holds every entry; recall ranks from an in-process index per agent, kept
//! current with the database (ADR 0028): BM25 over [`memory_terms`] (words and CJK bigrams,
//! so Chinese needs no tokenizer), and, when the store has an [`Embedder`]
//! ([`StoreMemory::set_embedder`]), by meaning too (ADR 0041): each entry's vector is
//! computed once when it is stored and kept in the row.

use sqlx::any::AnyRow;
use std::sync::Arc;
use toolbelt_core::{BoxFuture, Embedder};

use toolbelt_persist::{
    MemoryEntry, MemoryError, MemoryLimits, MemoryScope, MemoryStore, NewMemory, QuantizedVector,
    RecallHit, RecallQuery, memory_terms,
};

use crate::error::StoreError;
use crate::store::{Engine, Store, now_ms};

pub(crate) mod cache;

use cache::{COLUMNS, decode};

/// Memory entries in the store's database; cheap to clone.
#[derive(Debug, Clone)]
pub struct StoreMemory {
    store: Store,
    limits: MemoryLimits,
}

fn backend(err: impl Into<StoreError>) -> MemoryError {
    MemoryError::Backend(Box::new(err.into()))
}

/// SQL text with numbered placeholders and the values bound to them, in order.
struct Sql {
    text: String,
    binds: Vec<Bind>,
}

enum Bind {
    Text(String),
    Int(i64),
}

impl Sql {
    fn new(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            binds: Vec::new(),
        }
    }

    /// Appends `fragment` with `?` replaced by the next placeholder.
    fn push(&mut self, fragment: &str, bind: Bind) -> &mut Self {
        self.binds.push(bind);
        let n = self.binds.len();
        self.text.push_str(&fragment.replace('?', &format!("${n}")));
        self
    }

    fn raw(&mut self, fragment: &str) -> &mut Self {
        self.text.push_str(fragment);
        self
    }

    async fn fetch(self, pool: &sqlx::AnyPool) -> Result<Vec<AnyRow>, sqlx::Error> {
        let mut query = sqlx::query(sqlx::AssertSqlSafe(self.text));
        for bind in self.binds {
            query = match bind {
                Bind::Text(t) => query.bind(t),
                Bind::Int(i) => query.bind(i),
            };
        }
        query.fetch_all(pool).await
    }
}

impl StoreMemory {
    /// Memory in `store` with the default limits.
    pub fn new(store: Store) -> Self {
        Self {
            store,
            limits: MemoryLimits::default(),
        }
    }

    /// Sets the limits.
    #[must_use]
    pub fn with_limits(mut self, limits: MemoryLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits.
    pub fn limits(&self) -> &MemoryLimits {
        &self.limits
    }

    fn scope_filter(&self, sql: &mut Sql, scope: &MemoryScope) {
        sql.push(
            " AND (m.agent = ? OR m.shared = 1)",
            Bind::Text(scope.agent.clone()),
        );
        sql.push(
            " AND (m.user_id = '' OR m.user_id = ?)",
            Bind::Text(scope.user.clone().unwrap_or_default()),
        );
    }

    fn tag_filter(&self, sql: &mut Sql, tags: &[String]) {
        let func = match self.store.engine() {
            Engine::Sqlite => "instr",
            Engine::Postgres => "strpos",
        };
        for tag in tags {
            sql.push(
                &format!(" AND {func}(m.tags, ?) > 0"),
                Bind::Text(format!(",{},", tag.trim().to_lowercase())),
            );
        }
    }

    async fn insert(
        &self,
        scope: &MemoryScope,
        entry: NewMemory,
    ) -> Result<MemoryEntry, MemoryError> {
        let entry = entry.validate(&self.limits)?;
        // The vector is made before the transaction (it takes milliseconds of CPU).
        let embedder = self.store.memory_cache().embedder();
        let vector = match &embedder {
            Some(e) => embed(e.as_ref(), entry.text.clone())
                .await
                .as_deref()
                .and_then(QuantizedVector::quantize),
            None => None,
        };
        let terms = memory_terms(&entry.text).join(" ");
        let tags = if entry.tags.is_empty() {
            String::new()
        } else {
            format!(",{},", entry.tags.join(","))
        };
        let mut tx = self.store.begin().await.map_err(backend)?;
        // First: on Postgres the row lock orders memory writes, so ids become visible in
        // increasing order (what the recall indexes rely on).
        sqlx::query("UPDATE memory_version SET writes = writes + 1 WHERE id = 1")
            .execute(&mut **tx)
            .await
            .map_err(backend)?;
        if self.store.engine() == Engine::Postgres {
            // Serialises inserts of one agent so the count below holds.
            sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))::text")
                .bind(&scope.agent)
                .execute(&mut **tx)
                .await
                .map_err(backend)?;
        }
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM memories WHERE agent = $1")
            .bind(&scope.agent)
            .fetch_one(&mut **tx)
            .await
            .map_err(backend)?;
        if u64::try_from(count).unwrap_or(0) >= self.limits.max_entries_per_agent {
            return Err(MemoryError::AgentFull {
                agent: scope.agent.clone(),
                limit: self.limits.max_entries_per_agent,
            });
        }
        let created_at = now_ms();
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO memories (agent, user_id, text, terms, tags, importance, shared, created_at, embedding, embedding_model) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
        )
        .bind(&scope.agent)
        .bind(scope.user.clone().unwrap_or_default())
        .bind(&entry.text)
        .bind(&terms)
        .bind(&tags)
        .bind(i64::from(entry.importance))
        .bind(i64::from(entry.shared))
        .bind(created_at)
        .bind(vector.as_ref().map(QuantizedVector::to_bytes))
        .bind(vector.as_ref().and(embedder.as_ref()).map(|e| e.model().to_owned()))
        .fetch_one(&mut **tx)
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(MemoryEntry::new(
            id,
            scope.agent.clone(),
            scope.user.clone(),
            entry.text,
            entry.tags,
            entry.importance,
            entry.shared,
            created_at,
        ))
    }

    async fn search(
        &self,
        scope: &MemoryScope,
        query: &RecallQuery,
    ) -> Result<Vec<RecallHit>, MemoryError> {
        if query.limit == 0 || memory_terms(&query.query).is_empty() {
            return Ok(Vec::new());
        }
        let embedder = self.store.memory_cache().embedder();
        let model = embedder.as_ref().map(|e| e.model().to_owned());
        // The query's vector is made in a task of its own (the encoder works on the blocking
        // pool) while the index is brought up to date (a database round trip) and searched by
        // words: on two cores the encoder's time mostly hides behind theirs.
        let vector = embedder.map(|e| {
            let text = query.query.clone();
            tokio::spawn(async move { embed(e.as_ref(), text).await })
        });
        self.store
            .memory_cache()
            .with_index(self.store.pool(), &scope.agent, model.as_deref(), async |index| {
                let words = index.word_matches(scope, query);
                let vector = match vector {
                    Some(task) => task.await.unwrap_or_else(|e| {
                        tracing::warn!(error = %e, "the memory embedder's task failed; going on by words");
                        None
                    }),
                    None => None,
                };
                index.search_hybrid_with(scope, query, words, vector.as_deref())
            })
            .await
            .map_err(backend)
    }

    async fn page(
        &self,
        scope: &MemoryScope,
        tags: &[String],
        limit: usize,
        offset: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        let mut sql = Sql::new(&format!("SELECT {COLUMNS} FROM memories m WHERE 1 = 1"));
        self.scope_filter(&mut sql, scope);
        self.tag_filter(&mut sql, tags);
        sql.raw(" ORDER BY m.created_at DESC, m.id DESC");
        sql.push(
            " LIMIT ?",
            Bind::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
        );
        sql.push(
            " OFFSET ?",
            Bind::Int(i64::try_from(offset).unwrap_or(i64::MAX)),
        );
        let rows = sql.fetch(self.store.pool()).await.map_err(backend)?;
        rows.iter()
            .map(decode)
            .collect::<Result<_, _>>()
            .map_err(backend)
    }

    async fn mine(
        &self,
        scope: &MemoryScope,
        ids: &[i64],
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = Sql::new(&format!("SELECT {COLUMNS} FROM memories m WHERE "));
        sql.push("m.agent = ?", Bind::Text(scope.agent.clone()));
        sql.push(
            " AND m.user_id = ?",
            Bind::Text(scope.user.clone().unwrap_or_default()),
        );
        sql.raw(" AND m.id IN (");
        for (i, id) in ids.iter().enumerate() {
            sql.push(if i == 0 { "?" } else { ", ?" }, Bind::Int(*id));
        }
        sql.raw(") ORDER BY m.id");
        let rows = sql.fetch(self.store.pool()).await.map_err(backend)?;
        rows.iter()
            .map(decode)
            .collect::<Result<_, _>>()
            .map_err(backend)
    }

    async fn delete(&self, scope: &MemoryScope, ids: &[i64]) -> Result<u64, MemoryError> {
        let mut gone = 0;
        let mut tx = self.store.begin().await.map_err(backend)?;
        sqlx::query(
            "UPDATE memory_version SET writes = writes + 1, deletes = deletes + 1 WHERE id = 1",
        )
        .execute(&mut **tx)
        .await
        .map_err(backend)?;
        for id in ids {
            gone +=
                sqlx::query("DELETE FROM memories WHERE id = $1 AND agent = $2 AND user_id = $3")
                    .bind(*id)
                    .bind(&scope.agent)
                    .bind(scope.user.clone().unwrap_or_default())
                    .execute(&mut **tx)
                    .await
                    .map_err(backend)?
                    .rows_affected();
        }
        tx.commit().await.map_err(backend)?;
        Ok(gone)
    }

    /// Ranks memory recalls by meaning as well as words from now on, with `embedder`
    /// (shared by every clone of this store): entries stored from now on get a vector;
    /// entries stored before, or whose vector came from another model, are found by their
    /// words only.
    pub fn set_embedder(&self, embedder: Arc<dyn Embedder>) {
        self.store.memory_cache().set_embedder(embedder);
    }

    /// Number of entries `agent` keeps (all users).
    ///
    /// # Errors
    /// The database's error.
    pub async fn count(&self, agent: &str) -> crate::Result<u64> {
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM memories WHERE agent = $1")
            .bind(agent)
            .fetch_one(self.store.pool())
            .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }
}

impl Store {
    /// The memory tools' store over this database, with the default limits.
    pub fn memory(&self) -> StoreMemory {
        StoreMemory::new(self.clone())
    }
}

/// `text`'s vector; `None` (logged) when the embedder fails: the entry or the recall then
/// goes on by words alone.
async fn embed(embedder: &dyn Embedder, text: String) -> Option<Vec<f32>> {
    let texts = [text];
    let result = embedder.embed(&texts).await;
    let model = embedder.model();
    match result {
        Ok(mut vectors) if vectors.len() == 1 => vectors.pop(),
        Ok(vectors) => {
            tracing::warn!(%model, got = vectors.len(), "the memory embedder returned no single vector; going on by words");
            None
        }
        Err(error) => {
            tracing::warn!(%model, %error, "the memory embedder failed; going on by words");
            None
        }
    }
}

impl MemoryStore for StoreMemory {
    fn store<'a>(
        &'a self,
        scope: &'a MemoryScope,
        entry: NewMemory,
    ) -> BoxFuture<'a, Result<MemoryEntry, MemoryError>> {
        Box::pin(self.insert(scope, entry))
    }

    fn recall<'a>(
        &'a self,
        scope: &'a MemoryScope,
        query: &'a RecallQuery,
    ) -> BoxFuture<'a, Result<Vec<RecallHit>, MemoryError>> {
        Box::pin(self.search(scope, query))
    }

    fn list<'a>(
        &'a self,
        scope: &'a MemoryScope,
        tags: &'a [String],
        limit: usize,
        offset: usize,
    ) -> BoxFuture<'a, Result<Vec<MemoryEntry>, MemoryError>> {
        Box::pin(self.page(scope, tags, limit, offset))
    }

    fn owned<'a>(
        &'a self,
        scope: &'a MemoryScope,
        ids: &'a [i64],
    ) -> BoxFuture<'a, Result<Vec<MemoryEntry>, MemoryError>> {
        Box::pin(self.mine(scope, ids))
    }

    fn forget<'a>(
        &'a self,
        scope: &'a MemoryScope,
        ids: &'a [i64],
    ) -> BoxFuture<'a, Result<u64, MemoryError>> {
        Box::pin(self.delete(scope, ids))
    }
}
