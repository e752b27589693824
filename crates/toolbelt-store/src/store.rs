//! [`Store`]: the connection pool, engine detection, migrations and small shared helpers.

use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AnyPool, Row, SqlStr};

use crate::error::{Entity, Result, StoreError};

/// The database engine behind a [`Store`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Engine {
    /// SQLite: the embedded default, one file.
    Sqlite,
    /// Postgres: for several instances sharing one database.
    Postgres,
}

impl Engine {
    /// Reads the engine from a database URL.
    ///
    /// # Errors
    /// [`StoreError::UnsupportedUrl`] for anything but `sqlite:` and `postgres:`/`postgresql:`.
    pub fn from_url(url: &str) -> Result<Self> {
        let scheme = url.split(':').next().unwrap_or_default();
        match scheme {
            "sqlite" => Ok(Self::Sqlite),
            "postgres" | "postgresql" => Ok(Self::Postgres),
            other => Err(StoreError::UnsupportedUrl {
                scheme: other.to_owned(),
            }),
        }
    }

    /// `sqlite` or `postgres`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

/// Highest schema version this build knows (the number of the last migration).
/// Migrations from 100 on belong to memory and routines (ADR 0020, 0021), 104 to skills, 105 to
/// tokens limited to agents (ADR 0061), 106 to skills' revision and author (ADR 0067).
pub const SCHEMA_VERSION: i64 = 106;

const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../migrations/sqlite/0001_init.sql"),
    ),
    (
        100,
        "memory",
        include_str!("../migrations/sqlite/0100_memory.sql"),
    ),
    (
        101,
        "routines",
        include_str!("../migrations/sqlite/0101_routines.sql"),
    ),
    (
        102,
        "memory_version",
        include_str!("../migrations/sqlite/0102_memory_version.sql"),
    ),
    (
        103,
        "memory_vectors",
        include_str!("../migrations/sqlite/0103_memory_vectors.sql"),
    ),
    (
        104,
        "skills",
        include_str!("../migrations/sqlite/0104_skills.sql"),
    ),
    (
        105,
        "token_agents",
        include_str!("../migrations/sqlite/0105_token_agents.sql"),
    ),
    (
        106,
        "skill_revisions",
        include_str!("../migrations/sqlite/0106_skill_revisions.sql"),
    ),
];
const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../migrations/postgres/0001_init.sql"),
    ),
    (
        100,
        "memory",
        include_str!("../migrations/postgres/0100_memory.sql"),
    ),
    (
        101,
        "routines",
        include_str!("../migrations/postgres/0101_routines.sql"),
    ),
    (
        102,
        "memory_version",
        include_str!("../migrations/postgres/0102_memory_version.sql"),
    ),
    (
        103,
        "memory_vectors",
        include_str!("../migrations/postgres/0103_memory_vectors.sql"),
    ),
    (
        104,
        "skills",
        include_str!("../migrations/postgres/0104_skills.sql"),
    ),
    (
        105,
        "token_agents",
        include_str!("../migrations/postgres/0105_token_agents.sql"),
    ),
    (
        106,
        "skill_revisions",
        include_str!("../migrations/postgres/0106_skill_revisions.sql"),
    ),
];

/// How to open a [`Store`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StoreOptions {
    /// Largest number of pooled connections (default 8; SQLite files use at most 4).
    pub max_connections: u32,
    /// Apply pending migrations on open (default `true`). When `false`, opening fails
    /// if the schema is older than this build.
    pub migrate: bool,
    /// Postgres schema to use (created if missing) instead of the default `search_path`.
    /// Tests use one schema each so they run in parallel and leave nothing behind.
    pub pg_schema: Option<String>,
    /// Postgres: work on one connection until [`Store::widen_pool`] (default `false`).
    ///
    /// sqlx gives a connection back to its pool in a task of its own that first pings it, so
    /// statements run back to back on a wider pool each open a new connection, and each
    /// negotiates TLS under the default `sslmode=prefer`: a server's start-up opened four.
    pub single_connection_start: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            max_connections: 8,
            migrate: true,
            pg_schema: None,
            single_connection_start: false,
        }
    }
}

impl StoreOptions {
    /// Uses the Postgres schema `schema` (ignored for SQLite).
    pub fn with_pg_schema(mut self, schema: impl Into<String>) -> Self {
        self.pg_schema = Some(schema.into());
        self
    }

    /// Whether to apply pending migrations on open.
    pub fn with_migrate(mut self, migrate: bool) -> Self {
        self.migrate = migrate;
        self
    }

    /// Postgres: one connection until [`Store::widen_pool`] (see the field).
    pub fn with_single_connection_start(mut self, single: bool) -> Self {
        self.single_connection_start = single;
        self
    }
}

/// The pool statements run on: `start`, until `wide` is set by [`Store::widen_pool`].
#[derive(Debug, Clone)]
struct Pools {
    start: AnyPool,
    wide: std::sync::Arc<std::sync::OnceLock<AnyPool>>,
    /// Options of the wide pool, when `start` is narrower.
    widen_to: Option<AnyPoolOptions>,
}

/// Tools, versions, agents, bindings, the change feed, runs and the run log, in SQLite or Postgres.
///
/// Cloning is one reference count (servers clone it per request). Every multi-row write runs
/// in one transaction and is durable when the call returns. `Debug` shows the URL without its
/// password.
#[derive(Clone)]
pub struct Store {
    inner: std::sync::Arc<StoreInner>,
}

struct StoreInner {
    pools: Pools,
    /// Write transactions on SQLite take turns here (see [`Store::begin`]).
    write_turn: std::sync::Arc<tokio::sync::Mutex<()>>,
    engine: Engine,
    url: String,
    pg_schema: Option<String>,
    /// Recall indexes of agent memory, shared by the clones of this store.
    memory_cache: std::sync::Arc<crate::memory::cache::MemoryCache>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("engine", &self.inner.engine)
            .field("url", &redacted_url(&self.inner.url))
            .field("pg_schema", &self.inner.pg_schema)
            .finish_non_exhaustive()
    }
}

/// `url` without the password of its user info (`postgres://u:***@host/db`), for logs and
/// messages.
pub fn redacted_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let user_info = &url[scheme_end + 3..at];
            match user_info.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme_end + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

impl Store {
    pub(crate) fn memory_cache(&self) -> &crate::memory::cache::MemoryCache {
        &self.inner.memory_cache
    }

    /// Opens the database at `url`, creating a SQLite file on first use, and applies migrations.
    ///
    /// `url` is `sqlite://PATH` (relative to the working directory), `sqlite::memory:`, or
    /// `postgres://USER@HOST:PORT/DB`.
    ///
    /// # Errors
    /// [`StoreError::UnsupportedUrl`], [`StoreError::SchemaTooNew`] when a newer toolbelt migrated
    /// the database, or the database's own error.
    pub async fn open(url: &str) -> Result<Self> {
        Self::open_with(url, StoreOptions::default()).await
    }

    /// Opens the database at `url` with `options`.
    ///
    /// # Errors
    /// As [`Store::open`]; also [`StoreError::Invalid`] for a schema name that is not an identifier.
    pub async fn open_with(url: &str, options: StoreOptions) -> Result<Self> {
        sqlx::any::install_default_drivers();
        let engine = Engine::from_url(url)?;
        let (url, max) = match engine {
            Engine::Sqlite => sqlite_url(url),
            Engine::Postgres => (url.to_owned(), options.max_connections),
        };
        let pg_schema = match (&options.pg_schema, engine) {
            (Some(schema), Engine::Postgres) => {
                if schema.is_empty()
                    || !schema
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    return Err(StoreError::invalid(
                        "pg_schema",
                        format!("`{schema}` must be ASCII letters, digits and `_`"),
                    ));
                }
                Some(schema.clone())
            }
            _ => None,
        };
        let max = max.min(options.max_connections);
        let single = options.single_connection_start && engine == Engine::Postgres && max > 1;
        let start_max = if single { 1 } else { max };
        let pool = pool_options(engine, start_max, pg_schema.clone())
            .connect(&url)
            .await?;
        if let Some(schema) = &pg_schema {
            let ddl = format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"");
            sqlx::query(sqlx::AssertSqlSafe(ddl)).execute(&pool).await?;
        }
        let store = Self {
            inner: std::sync::Arc::new(StoreInner {
                pools: Pools {
                    start: pool,
                    wide: std::sync::Arc::default(),
                    widen_to: single.then(|| pool_options(engine, max, pg_schema.clone())),
                },
                write_turn: std::sync::Arc::default(),
                engine,
                url,
                pg_schema,
                memory_cache: std::sync::Arc::default(),
            }),
        };
        let applied = store.applied_schema_version().await?;
        if applied > SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew {
                found: applied,
                known: SCHEMA_VERSION,
            });
        }
        if options.migrate {
            store.migrate().await?;
        } else if applied < SCHEMA_VERSION {
            return Err(StoreError::invalid(
                "schema",
                format!(
                    "the database is at schema version {applied}, this build needs {SCHEMA_VERSION}; run `toolbelt db migrate`"
                ),
            ));
        }
        Ok(store)
    }

    /// Applies pending migrations; returns the schema version after.
    ///
    /// # Errors
    /// [`StoreError::SchemaTooNew`] or the migration's error (nothing of a failed migration stays).
    pub async fn migrate(&self) -> Result<i64> {
        let applied = self.applied_schema_version().await?;
        if applied > SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew {
                found: applied,
                known: SCHEMA_VERSION,
            });
        }
        let source = match self.inner.engine {
            Engine::Sqlite => SQLITE_MIGRATIONS,
            Engine::Postgres => POSTGRES_MIGRATIONS,
        };
        let migrations = source
            .iter()
            .map(|(version, description, sql)| {
                Migration::new(
                    *version,
                    Cow::Borrowed(*description),
                    MigrationType::Simple,
                    SqlStr::from_static(sql),
                    false,
                )
            })
            .collect();
        let migrator = Migrator::with_migrations(migrations);
        migrator.run(self.pool()).await?;
        Ok(SCHEMA_VERSION)
    }

    /// The highest migration applied to the database, 0 for an empty database.
    ///
    /// # Errors
    /// The database's error.
    pub async fn applied_schema_version(&self) -> Result<i64> {
        let exists_sql = match self.inner.engine {
            Engine::Sqlite => {
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'"
            }
            Engine::Postgres => {
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = '_sqlx_migrations'"
            }
        };
        let exists: i64 = sqlx::query_scalar(exists_sql)
            .fetch_one(self.pool())
            .await?;
        if exists == 0 {
            return Ok(0);
        }
        let version: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success = TRUE")
                .fetch_one(self.pool())
                .await?;
        Ok(version.unwrap_or(0))
    }

    /// The engine behind this store.
    pub fn engine(&self) -> Engine {
        self.inner.engine
    }

    /// The URL the store was opened with (SQLite URLs gain `mode=rwc`).
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// The Postgres schema this store uses, when one was given.
    pub fn pg_schema(&self) -> Option<&str> {
        self.inner.pg_schema.as_deref()
    }

    /// Lets the pool grow to `max_connections` after a [single-connection
    /// start](StoreOptions::single_connection_start); does nothing otherwise or when done
    /// already. New connections are opened when statements need them.
    ///
    /// # Errors
    /// The database's error when the URL's options no longer parse (they parsed at open).
    pub fn widen_pool(&self) -> Result<()> {
        let Some(options) = &self.inner.pools.widen_to else {
            return Ok(());
        };
        if self.inner.pools.wide.get().is_some() {
            return Ok(());
        }
        let wide = options.clone().connect_lazy(&self.inner.url)?;
        // Statements under way finish on the start-up pool; its connection then idles until
        // the pool's idle timeout closes it (closing it here could fail a statement that had
        // just picked that pool).
        let _ = self.inner.pools.wide.set(wide);
        Ok(())
    }

    /// The underlying pool, for crates that add their own tables through their own migrations.
    pub fn pool(&self) -> &AnyPool {
        self.inner
            .pools
            .wide
            .get()
            .unwrap_or(&self.inner.pools.start)
    }

    /// Closes the pool, waiting for connections to be returned.
    pub async fn close(&self) {
        self.pool().close().await;
    }

    /// Starts a write transaction. On SQLite it takes the write lock up front (`BEGIN
    /// IMMEDIATE`), so a writer of another process makes it wait on the busy timeout instead
    /// of failing on lock upgrade; writers of this process first queue for their turn in
    /// order, since SQLite's busy handler polls with sleeps of 1 to 100 ms (eight concurrent
    /// tool updates took 15 ms where one takes 0.3 ms).
    pub(crate) async fn begin(&self) -> Result<WriteTx> {
        Ok(match self.inner.engine {
            Engine::Sqlite => {
                let turn = self.inner.write_turn.clone().lock_owned().await;
                WriteTx {
                    tx: self.pool().begin_with("BEGIN IMMEDIATE").await?,
                    _turn: Some(turn),
                }
            }
            Engine::Postgres => WriteTx {
                tx: self.pool().begin().await?,
                _turn: None,
            },
        })
    }
}

/// A write transaction from [`Store::begin`], holding this process's SQLite write turn until
/// it ends. It derefs to the sqlx transaction: run statements on `&mut **tx`.
pub(crate) struct WriteTx {
    tx: sqlx::Transaction<'static, sqlx::Any>,
    _turn: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl WriteTx {
    /// Commits, then gives the turn to the next writer.
    pub(crate) async fn commit(self) -> Result<()> {
        self.tx.commit().await?;
        Ok(())
    }

    /// Rolls back, then gives the turn to the next writer.
    pub(crate) async fn rollback(self) -> Result<()> {
        self.tx.rollback().await?;
        Ok(())
    }
}

impl std::ops::Deref for WriteTx {
    type Target = sqlx::Transaction<'static, sqlx::Any>;
    fn deref(&self) -> &Self::Target {
        &self.tx
    }
}

impl std::ops::DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.tx
    }
}

fn sqlite_url(url: &str) -> (String, u32) {
    if url.contains(":memory:") || url.contains("mode=memory") {
        // Each connection to `:memory:` is its own database: keep one.
        return (url.to_owned(), 1);
    }
    let url = if url.contains("mode=") {
        url.to_owned()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    };
    (url, 4)
}

fn pool_options(engine: Engine, max: u32, pg_schema: Option<String>) -> AnyPoolOptions {
    AnyPoolOptions::new()
        .max_connections(max.max(1))
        .acquire_timeout(Duration::from_secs(30))
        .after_connect(move |conn, _meta| {
            let pg_schema = pg_schema.clone();
            Box::pin(async move {
                match engine {
                    Engine::Sqlite => {
                        for pragma in [
                            "PRAGMA journal_mode = WAL",
                            "PRAGMA foreign_keys = ON",
                            "PRAGMA busy_timeout = 10000",
                            "PRAGMA synchronous = NORMAL",
                        ] {
                            sqlx::query(pragma).execute(&mut *conn).await?;
                        }
                    }
                    Engine::Postgres => {
                        if let Some(schema) = pg_schema {
                            let sql = format!("SET search_path TO \"{schema}\"");
                            sqlx::query(sqlx::AssertSqlSafe(sql))
                                .execute(&mut *conn)
                                .await?;
                        }
                    }
                }
                Ok(())
            })
        })
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

pub(crate) fn get_flag(row: &AnyRow, column: &str) -> Result<bool> {
    Ok(row.try_get::<i64, _>(column)? != 0)
}

pub(crate) fn flag(value: bool) -> i64 {
    i64::from(value)
}

/// Decodes a JSON text column into `T`, naming the record on failure.
pub(crate) fn decode_json<T: serde::de::DeserializeOwned>(
    row: &AnyRow,
    column: &'static str,
    entity: Entity,
    name: &str,
) -> Result<T> {
    let text: String = row.try_get(column)?;
    serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
        entity,
        name: name.to_owned(),
        field: column,
        reason: e.to_string(),
    })
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T, field: &str) -> Result<String> {
    serde_json::to_string(value).map_err(|e| StoreError::invalid(field, e.to_string()))
}

/// Records a change in the feed inside `tx`; live registries pick it up.
/// Largest JSON rows parameter to send in one statement. sqlx 0.9.0 leaves Nagle's
/// algorithm on (sqlx issue #4335): on Postgres over TCP a message larger than the socket's
/// initial send buffer (16 KiB on Linux) goes out in two writes, and the second waits for
/// the server's delayed ACK, ~40 ms per statement. Below it a statement is one write:
/// measured on loopback, a run-log INSERT of 150 entries (~14 KiB) took 3 ms, of 180 entries
/// 45 ms. SQLite has no socket.
pub(crate) fn statement_bytes(engine: Engine) -> usize {
    match engine {
        Engine::Sqlite => usize::MAX,
        Engine::Postgres => 12 * 1024,
    }
}

/// `rows` (each a JSON value's text) as JSON arrays of at most `max_rows` rows and, unless
/// one row alone is larger, at most `budget` bytes each, in order.
pub(crate) fn json_arrays(rows: &[String], budget: usize, max_rows: usize) -> Vec<String> {
    let mut arrays = Vec::new();
    let mut array = String::new();
    let mut count = 0;
    for row in rows {
        if count > 0 && (count == max_rows || array.len() + row.len() + 2 > budget) {
            array.push(']');
            arrays.push(std::mem::take(&mut array));
            count = 0;
        }
        array.push(if count == 0 { '[' } else { ',' });
        array.push_str(row);
        count += 1;
    }
    if count > 0 {
        array.push(']');
        arrays.push(array);
    }
    arrays
}

pub(crate) async fn record_change(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    entity: &str,
    name: &str,
    op: &str,
) -> Result<()> {
    sqlx::query("INSERT INTO changes (entity, name, op, at) VALUES ($1, $2, $3, $4)")
        .bind(entity)
        .bind(name)
        .bind(op)
        .bind(now_ms())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn debug_and_redacted_url_hide_the_password() {
        assert_eq!(
            super::redacted_url("postgres://app:s3cret@db:5432/toolbelt"),
            "postgres://app:***@db:5432/toolbelt"
        );
        assert_eq!(
            super::redacted_url("sqlite://toolbelt.db"),
            "sqlite://toolbelt.db"
        );
    }
    use super::json_arrays;

    #[test]
    fn json_arrays_split_by_bytes_and_rows_and_keep_order() {
        let rows: Vec<String> = (0..10).map(|i| format!("[{i},\"abcdef\"]")).collect();
        let all = json_arrays(&rows, usize::MAX, usize::MAX);
        assert_eq!(all.len(), 1);
        let parsed: Vec<serde_json::Value> = serde_json::from_str(&all[0]).unwrap();
        assert_eq!(parsed.len(), 10);
        // Each row is 12 bytes: two rows, a comma and the brackets make 27.
        let small = json_arrays(&rows, 27, usize::MAX);
        assert_eq!(small.len(), 5);
        assert!(small.iter().all(|a| a.len() <= 27), "{small:?}");
        let joined: Vec<serde_json::Value> = small
            .iter()
            .flat_map(|a| serde_json::from_str::<Vec<serde_json::Value>>(a).unwrap())
            .collect();
        assert_eq!(joined, parsed);
        assert_eq!(json_arrays(&rows, usize::MAX, 3).len(), 4);
        // A row larger than the budget goes alone rather than being dropped.
        assert_eq!(json_arrays(&rows[..2], 5, usize::MAX).len(), 2);
        assert!(json_arrays(&[], 10, 10).is_empty());
    }
}
