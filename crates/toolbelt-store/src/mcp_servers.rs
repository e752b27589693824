//! MCP server configurations (the MCP crate interprets `config`; the store keeps it).

use serde::Serialize;
use serde_json::Value;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::error::{Entity, Result, StoreError};
use crate::revision::{Revision, Table, check_revision};
use crate::store::{Store, decode_json, flag, get_flag, now_ms, record_change, to_json};

/// A stored MCP server.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct McpServerRecord {
    /// Unique name; its tools are named by the MCP crate.
    pub name: String,
    /// Transport, command/URL, environment (secret names only), as JSON.
    pub config: Value,
    /// Whether to connect to it.
    pub enabled: bool,
    /// Bumped by every change.
    pub revision: i64,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub updated_at: i64,
}

fn server_from_row(row: &AnyRow) -> Result<McpServerRecord> {
    let name: String = row.try_get("name")?;
    Ok(McpServerRecord {
        config: decode_json(row, "config", Entity::McpServer, &name)?,
        enabled: get_flag(row, "enabled")?,
        revision: row.try_get("revision")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        name,
    })
}

const SELECT_SERVER: &str =
    "SELECT name, config, enabled, revision, created_at, updated_at FROM mcp_servers";

/// MCP server configurations: the operations of that aggregate, from [`Store::mcp_servers`].
#[derive(Debug, Clone, Copy)]
pub struct McpServers<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// MCP server configurations.
    pub fn mcp_servers(&self) -> McpServers<'_> {
        McpServers { store: self }
    }
}

impl McpServers<'_> {
    /// Creates the MCP server `name` with `config`.
    ///
    /// # Errors
    /// [`StoreError::AlreadyExists`] when one has that name, [`StoreError::Invalid`] for an
    /// empty name or a `config` that is not an object.
    pub async fn create(&self, name: &str, config: &Value) -> Result<McpServerRecord> {
        check_server(name, config)?;
        let at = now_ms();
        let mut tx = self.store.begin().await?;
        let exists: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM mcp_servers WHERE name = $1")
            .bind(name)
            .fetch_one(&mut **tx)
            .await?;
        if exists > 0 {
            return Err(StoreError::AlreadyExists {
                entity: Entity::McpServer,
                name: name.to_owned(),
            });
        }
        sqlx::query(
            "INSERT INTO mcp_servers (name, config, enabled, revision, created_at, updated_at) VALUES ($1, $2, 1, 1, $3, $3)",
        )
        .bind(name)
        .bind(to_json(config, "config")?)
        .bind(at)
        .execute(&mut **tx)
        .await?;
        record_change(&mut tx, "mcp_server", name, "upsert").await?;
        tx.commit().await?;
        self.get(name).await
    }

    /// Replaces the config of the MCP server `name`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Conflict`] when the revision is not
    /// `expected_revision`, [`StoreError::Invalid`] as for creation.
    pub async fn update(
        &self,
        name: &str,
        config: &Value,
        expected_revision: Revision,
    ) -> Result<McpServerRecord> {
        check_server(name, config)?;
        let mut tx = self.store.begin().await?;
        check_revision(&mut tx, Table::McpServers, name, expected_revision).await?;
        sqlx::query("UPDATE mcp_servers SET config = $1, updated_at = $2 WHERE name = $3")
            .bind(to_json(config, "config")?)
            .bind(now_ms())
            .bind(name)
            .execute(&mut **tx)
            .await?;
        record_change(&mut tx, "mcp_server", name, "upsert").await?;
        tx.commit().await?;
        self.get(name).await
    }

    /// Enables or disables an MCP server.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Conflict`].
    pub async fn set_enabled(
        &self,
        name: &str,
        enabled: bool,
        expected_revision: Revision,
    ) -> Result<McpServerRecord> {
        let mut tx = self.store.begin().await?;
        check_revision(&mut tx, Table::McpServers, name, expected_revision).await?;
        sqlx::query("UPDATE mcp_servers SET enabled = $1, updated_at = $2 WHERE name = $3")
            .bind(flag(enabled))
            .bind(now_ms())
            .bind(name)
            .execute(&mut **tx)
            .await?;
        record_change(&mut tx, "mcp_server", name, "upsert").await?;
        tx.commit().await?;
        self.get(name).await
    }

    /// The MCP server `name`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub async fn get(&self, name: &str) -> Result<McpServerRecord> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT_SERVER} WHERE name = $1"
        )))
        .bind(name)
        .fetch_optional(self.store.pool())
        .await?
        .ok_or_else(|| StoreError::not_found(Entity::McpServer, name))?;
        server_from_row(&row)
    }

    /// Every MCP server, by name.
    ///
    /// # Errors
    /// The database's error.
    pub async fn list(&self) -> Result<Vec<McpServerRecord>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT_SERVER} ORDER BY name"
        )))
        .fetch_all(self.store.pool())
        .await?;
        rows.iter().map(server_from_row).collect()
    }

    /// Deletes the MCP server `name` (its imported tools are the MCP crate's to remove).
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Conflict`].
    pub async fn delete(&self, name: &str, expected_revision: Revision) -> Result<()> {
        let mut tx = self.store.begin().await?;
        check_revision(&mut tx, Table::McpServers, name, expected_revision).await?;
        sqlx::query("DELETE FROM mcp_servers WHERE name = $1")
            .bind(name)
            .execute(&mut **tx)
            .await?;
        record_change(&mut tx, "mcp_server", name, "delete").await?;
        tx.commit().await?;
        Ok(())
    }
}

/// What the store checks of an MCP server before writing it.
fn check_server(name: &str, config: &Value) -> Result<()> {
    if name.trim().is_empty() {
        return Err(StoreError::invalid("name", "must not be empty"));
    }
    if !config.is_object() {
        return Err(StoreError::invalid("config", "must be a JSON object"));
    }
    Ok(())
}
