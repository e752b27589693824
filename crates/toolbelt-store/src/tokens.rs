//! API tokens: only a SHA-256 hash of each secret is stored; the secret is shown once.

use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::error::{Entity, Result, StoreError};
use crate::store::{Store, decode_json, now_ms, to_json};

/// A stored API token (without its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TokenRecord {
    /// UUID v7.
    pub id: String,
    /// Unique, human-chosen name.
    pub name: String,
    /// Scopes granted, e.g. `tools:read`, `agents:write`, `runs:write`, `admin`.
    pub scopes: Vec<String>,
    /// The agents it is limited to, `None` for every agent.
    pub agents: Option<Vec<String>>,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms, when revoked.
    pub revoked_at: Option<i64>,
    /// Unix ms of the last successful [`Tokens::verify`].
    pub last_used_at: Option<i64>,
}

impl TokenRecord {
    /// Whether the token grants `scope` (or `admin`).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope || s == "admin")
    }
}

/// The hex SHA-256 of a token secret, as stored.
pub fn token_hash(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn token_from_row(row: &AnyRow) -> Result<TokenRecord> {
    let name: String = row.try_get("name")?;
    Ok(TokenRecord {
        id: row.try_get("id")?,
        scopes: decode_json(row, "scopes", Entity::Token, &name)?,
        agents: match row.try_get::<Option<String>, _>("agents")? {
            None => None,
            Some(_) => Some(decode_json(row, "agents", Entity::Token, &name)?),
        },
        created_at: row.try_get("created_at")?,
        revoked_at: row.try_get("revoked_at")?,
        last_used_at: row.try_get("last_used_at")?,
        name,
    })
}

const SELECT_TOKEN: &str =
    "SELECT id, name, scopes, agents, created_at, revoked_at, last_used_at FROM api_tokens";

/// API tokens: the operations of that aggregate, from [`Store::tokens`].
#[derive(Debug, Clone, Copy)]
pub struct Tokens<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// API tokens.
    pub fn tokens(&self) -> Tokens<'_> {
        Tokens { store: self }
    }
}

impl Tokens<'_> {
    /// Creates a token named `name`; returns the record and the secret (`tb_` + 64 hex digits),
    /// which is not stored and cannot be shown again.
    ///
    /// # Errors
    /// [`StoreError::AlreadyExists`], [`StoreError::Invalid`] for an empty name or scope.
    pub async fn create(&self, name: &str, scopes: &[String]) -> Result<(TokenRecord, String)> {
        self.create_for(name, scopes, None).await
    }

    /// As [`Tokens::create`], limited to `agents` when given (the token then reaches those
    /// agents and what belongs to them only).
    ///
    /// # Errors
    /// As [`Tokens::create`]; [`StoreError::Invalid`] for an empty agent name.
    pub async fn create_for(
        &self,
        name: &str,
        scopes: &[String],
        agents: Option<&[String]>,
    ) -> Result<(TokenRecord, String)> {
        if let Some(i) = agents
            .into_iter()
            .flatten()
            .position(|a| a.trim().is_empty())
        {
            return Err(StoreError::invalid(
                format!("agents[{i}]"),
                "must not be empty",
            ));
        }
        if name.trim().is_empty() {
            return Err(StoreError::invalid("name", "must not be empty"));
        }
        if let Some(i) = scopes.iter().position(|s| s.trim().is_empty()) {
            return Err(StoreError::invalid(
                format!("scopes[{i}]"),
                "must not be empty",
            ));
        }
        let secret = format!(
            "tb_{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let id = uuid::Uuid::now_v7().to_string();
        let mut tx = self.store.begin().await?;
        let exists: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM api_tokens WHERE name = $1")
            .bind(name)
            .fetch_one(&mut **tx)
            .await?;
        if exists > 0 {
            return Err(StoreError::AlreadyExists {
                entity: Entity::Token,
                name: name.to_owned(),
            });
        }
        sqlx::query(
            "INSERT INTO api_tokens (id, name, scopes, agents, token_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id.as_str())
        .bind(name)
        .bind(to_json(&scopes, "scopes")?)
        .bind(agents.map(|a| to_json(&a, "agents")).transpose()?)
        .bind(token_hash(&secret))
        .bind(now_ms())
        .execute(&mut **tx)
        .await?;
        tx.commit().await?;
        Ok((self.get(name).await?, secret))
    }

    /// The token whose secret is `secret`, if it exists and is not revoked; records its use.
    ///
    /// # Errors
    /// The database's error.
    pub async fn verify(&self, secret: &str) -> Result<Option<TokenRecord>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT_TOKEN} WHERE token_hash = $1 AND revoked_at IS NULL"
        )))
        .bind(token_hash(secret))
        .fetch_optional(self.store.pool())
        .await?;
        let Some(row) = row else { return Ok(None) };
        let mut token = token_from_row(&row)?;
        let at = now_ms();
        sqlx::query("UPDATE api_tokens SET last_used_at = $1 WHERE id = $2")
            .bind(at)
            .bind(token.id.as_str())
            .execute(self.store.pool())
            .await?;
        token.last_used_at = Some(at);
        Ok(Some(token))
    }

    /// The token named `name`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub async fn get(&self, name: &str) -> Result<TokenRecord> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT_TOKEN} WHERE name = $1"
        )))
        .bind(name)
        .fetch_optional(self.store.pool())
        .await?
        .ok_or_else(|| StoreError::not_found(Entity::Token, name))?;
        token_from_row(&row)
    }

    /// Every token, by name.
    ///
    /// # Errors
    /// The database's error.
    pub async fn list(&self) -> Result<Vec<TokenRecord>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("{SELECT_TOKEN} ORDER BY name")))
            .fetch_all(self.store.pool())
            .await?;
        rows.iter().map(token_from_row).collect()
    }

    /// Revokes the token named `name` (kept for the audit trail).
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub async fn revoke(&self, name: &str) -> Result<TokenRecord> {
        let done = sqlx::query(
            "UPDATE api_tokens SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL",
        )
        .bind(now_ms())
        .bind(name)
        .execute(self.store.pool())
        .await?;
        let token = self.get(name).await?;
        if done.rows_affected() == 0 && token.revoked_at.is_none() {
            return Err(StoreError::not_found(Entity::Token, name));
        }
        Ok(token)
    }
}
