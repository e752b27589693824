//! Skills in the Agent Skills format: name, description, instructions (ADR 0047).

use std::collections::BTreeMap;
use std::path::{Component, Path};

use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::error::{Entity, Result, StoreError};
use crate::store::{Store, decode_json, now_ms, record_change, to_json};

/// A skill to store: what `SKILL.md` holds, and the files that were beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SkillDraft {
    /// `lowercase-with-hyphens`, 1 to [`SkillDraft::MAX_NAME`] characters.
    pub name: String,
    /// When to use it, 1 to [`SkillDraft::MAX_DESCRIPTION`] characters; the only text routed on.
    pub description: String,
    /// The Markdown the agent adds to a run the skill was chosen for.
    pub instructions: String,
    /// The other front-matter keys (`license`, ...).
    pub metadata: BTreeMap<String, String>,
    /// Paths of the files beside `SKILL.md`, relative to its folder (informational:
    /// the files themselves are not stored).
    pub files: Vec<String>,
}

impl SkillDraft {
    /// Longest name accepted (the Agent Skills limit, as `toolbelt_router::MAX_SKILL_NAME`;
    /// the store does not depend on the router, so the limit is repeated here).
    pub const MAX_NAME: usize = 64;
    /// Longest description accepted, in characters (as `toolbelt_router::MAX_SKILL_DESCRIPTION`).
    pub const MAX_DESCRIPTION: usize = 1024;

    /// A skill with no metadata and no files.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        instructions: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            instructions: instructions.into(),
            metadata: BTreeMap::new(),
            files: Vec::new(),
        }
    }

    /// Sets the other front-matter keys.
    #[must_use]
    pub fn with_metadata(mut self, metadata: BTreeMap<String, String>) -> Self {
        self.metadata = metadata;
        self
    }

    /// Sets the files that were beside `SKILL.md`.
    #[must_use]
    pub fn with_files(mut self, files: Vec<String>) -> Self {
        self.files = files;
        self
    }

    /// Checks the draft with the rules `toolbelt_router::Skill::parse` applies to `SKILL.md`.
    fn validate(&self) -> Result<()> {
        let name = &self.name;
        if name.is_empty()
            || name.len() > Self::MAX_NAME
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(StoreError::invalid(
                "name",
                format!(
                    "{name:?} must be 1-{} lowercase letters, digits or hyphens",
                    Self::MAX_NAME
                ),
            ));
        }
        let chars = self.description.chars().count();
        if self.description.trim().is_empty() {
            return Err(StoreError::invalid("description", "must not be empty"));
        }
        if chars > Self::MAX_DESCRIPTION {
            return Err(StoreError::invalid(
                "description",
                format!("has {chars} characters; at most {}", Self::MAX_DESCRIPTION),
            ));
        }
        for (i, file) in self.files.iter().enumerate() {
            let path = Path::new(file);
            let relative = !file.is_empty()
                && path
                    .components()
                    .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
            if !relative {
                return Err(StoreError::invalid(
                    format!("files[{i}]"),
                    format!("{file:?} must be a path relative to the skill's folder, without `..`"),
                ));
            }
        }
        Ok(())
    }

    /// SHA-256 (hex) of everything stored but the timestamps.
    fn hash(&self) -> Result<String> {
        let text = to_json(self, "skill")?;
        let digest = Sha256::digest(text.as_bytes());
        Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// A stored skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SkillRecord {
    /// Unique name.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// The Markdown instructions.
    pub instructions: String,
    /// The other front-matter keys.
    pub metadata: BTreeMap<String, String>,
    /// Files that were beside `SKILL.md`, relative to its folder.
    pub files: Vec<String>,
    /// SHA-256 (hex) of name, description, instructions, metadata and files.
    pub content_hash: String,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms of the last change of content.
    pub updated_at: i64,
}

/// What [`Skills::put`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkillChange {
    /// There was no skill of that name.
    Created,
    /// The stored skill had other content; it was replaced.
    Updated,
    /// The stored skill had the same content; nothing was written.
    Unchanged,
}

impl SkillChange {
    /// `created`, `updated` or `unchanged`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Updated => "updated",
            Self::Unchanged => "unchanged",
        }
    }
}

fn skill_from_row(row: &AnyRow) -> Result<SkillRecord> {
    let name: String = row.try_get("name")?;
    Ok(SkillRecord {
        description: row.try_get("description")?,
        instructions: row.try_get("instructions")?,
        metadata: decode_json(row, "metadata", Entity::Skill, &name)?,
        files: decode_json(row, "files", Entity::Skill, &name)?,
        content_hash: row.try_get("content_hash")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        name,
    })
}

const SELECT_SKILL: &str = "SELECT name, description, instructions, metadata, files, content_hash, created_at, updated_at FROM skills";

/// Skills: the operations of that aggregate, from [`Store::skills`].
#[derive(Debug, Clone, Copy)]
pub struct Skills<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// Skills.
    pub fn skills(&self) -> Skills<'_> {
        Skills { store: self }
    }
}

impl Skills<'_> {
    /// Creates the skill `draft.name`, or replaces its content when it differs.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] naming the field (`name`, `description`, `files[i]`) when the
    /// draft breaks the Agent Skills rules; nothing is written then.
    pub async fn put(&self, draft: &SkillDraft) -> Result<(SkillRecord, SkillChange)> {
        draft.validate()?;
        let hash = draft.hash()?;
        let at = now_ms();
        let mut tx = self.store.begin().await?;
        let stored: Option<String> =
            sqlx::query_scalar("SELECT content_hash FROM skills WHERE name = $1")
                .bind(&draft.name)
                .fetch_optional(&mut **tx)
                .await?;
        let change = match stored {
            Some(stored) if stored == hash => SkillChange::Unchanged,
            Some(_) => {
                sqlx::query(
                    "UPDATE skills SET description = $1, instructions = $2, metadata = $3, files = $4, content_hash = $5, updated_at = $6 WHERE name = $7",
                )
                .bind(&draft.description)
                .bind(&draft.instructions)
                .bind(to_json(&draft.metadata, "metadata")?)
                .bind(to_json(&draft.files, "files")?)
                .bind(&hash)
                .bind(at)
                .bind(&draft.name)
                .execute(&mut **tx)
                .await?;
                SkillChange::Updated
            }
            None => {
                sqlx::query(
                    "INSERT INTO skills (name, description, instructions, metadata, files, content_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
                )
                .bind(&draft.name)
                .bind(&draft.description)
                .bind(&draft.instructions)
                .bind(to_json(&draft.metadata, "metadata")?)
                .bind(to_json(&draft.files, "files")?)
                .bind(&hash)
                .bind(at)
                .execute(&mut **tx)
                .await?;
                SkillChange::Created
            }
        };
        if change != SkillChange::Unchanged {
            record_change(&mut tx, "skill", &draft.name, "upsert").await?;
        }
        tx.commit().await?;
        Ok((self.get(&draft.name).await?, change))
    }

    /// The skill `name`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub async fn get(&self, name: &str) -> Result<SkillRecord> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT_SKILL} WHERE name = $1"
        )))
        .bind(name)
        .fetch_optional(self.store.pool())
        .await?
        .ok_or_else(|| StoreError::not_found(Entity::Skill, name))?;
        skill_from_row(&row)
    }

    /// Every skill, by name.
    ///
    /// # Errors
    /// The database's error.
    pub async fn list(&self) -> Result<Vec<SkillRecord>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("{SELECT_SKILL} ORDER BY name")))
            .fetch_all(self.store.pool())
            .await?;
        rows.iter().map(skill_from_row).collect()
    }

    /// Deletes the skill `name`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub async fn delete(&self, name: &str) -> Result<()> {
        let mut tx = self.store.begin().await?;
        let deleted = sqlx::query("DELETE FROM skills WHERE name = $1")
            .bind(name)
            .execute(&mut **tx)
            .await?
            .rows_affected();
        if deleted == 0 {
            return Err(StoreError::not_found(Entity::Skill, name));
        }
        record_change(&mut tx, "skill", name, "delete").await?;
        tx.commit().await?;
        Ok(())
    }
}
