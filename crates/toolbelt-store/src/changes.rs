//! The change feed: one row per change of a tool, agent or MCP server, in commit order of
//! its sequence number. Live registries read it; Postgres also NOTIFYs on every insert.

use serde::Serialize;
use sqlx::Row;

use crate::error::Result;
use crate::store::Store;

/// One entry of the change feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Change {
    /// Monotonic sequence number.
    pub seq: i64,
    /// `tool`, `agent` or `mcp_server`.
    pub entity: String,
    /// The record's name (`*` for a bulk sync).
    pub name: String,
    /// `upsert`, `delete` or `sync`.
    pub op: String,
    /// Unix ms.
    pub at: i64,
}

/// The change feed: the operations of that aggregate, from [`Store::changes`].
#[derive(Debug, Clone, Copy)]
pub struct Changes<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// The change feed.
    pub fn changes(&self) -> Changes<'_> {
        Changes { store: self }
    }
}

impl Changes<'_> {
    /// Changes with a sequence number above `after`, oldest first, at most `limit`.
    ///
    /// # Errors
    /// The database's error.
    pub async fn since(&self, after: i64, limit: i64) -> Result<Vec<Change>> {
        let rows = sqlx::query(
            "SELECT seq, entity, name, op, at FROM changes WHERE seq > $1 ORDER BY seq LIMIT $2",
        )
        .bind(after)
        .bind(limit)
        .fetch_all(self.store.pool())
        .await?;
        rows.iter().map(change_from_row).collect()
    }

    /// The changes numbered `seqs` that exist, oldest first (a Postgres notification carries
    /// the number of a committed change).
    ///
    /// # Errors
    /// The database's error.
    pub(crate) async fn numbered(&self, seqs: &[i64]) -> Result<Vec<Change>> {
        let mut changes = Vec::with_capacity(seqs.len());
        for chunk in seqs.chunks(crate::tools::IN_LIST_CHUNK) {
            let sql = format!(
                "SELECT seq, entity, name, op, at FROM changes WHERE seq IN ({}) ORDER BY seq",
                crate::tools::placeholders(chunk.len())
            );
            // Only numbered placeholders are formatted in; the values are bound.
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for seq in chunk {
                query = query.bind(*seq);
            }
            for row in query.fetch_all(self.store.pool()).await? {
                changes.push(change_from_row(&row)?);
            }
        }
        changes.sort_by_key(|c| c.seq);
        Ok(changes)
    }

    /// The newest sequence number of the change feed (0 when empty).
    ///
    /// # Errors
    /// The database's error.
    pub async fn latest(&self) -> Result<i64> {
        let seq: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM changes")
            .fetch_one(self.store.pool())
            .await?;
        Ok(seq.unwrap_or(0))
    }
}

fn change_from_row(row: &sqlx::any::AnyRow) -> Result<Change> {
    Ok(Change {
        seq: row.try_get("seq")?,
        entity: row.try_get("entity")?,
        name: row.try_get("name")?,
        op: row.try_get("op")?,
        at: row.try_get("at")?,
    })
}
