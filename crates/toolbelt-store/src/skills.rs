//! Skills in the Agent Skills format: name, description, instructions (ADR 0047).

use std::collections::BTreeMap;
use std::path::{Component, Path};

use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::error::{Entity, Result, StoreError};
use crate::store::{Store, decode_json, now_ms, record_change, to_json};
use crate::stored::Stored;

/// A skill: what `SKILL.md` holds, and the files that were beside it. Written with
/// [`Skills::put`]; the store hands it back as [`Stored<SkillSpec>`](crate::Stored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SkillSpec {
    /// `lowercase-with-hyphens`, 1 to [`SkillSpec::MAX_NAME`] characters.
    pub name: String,
    /// When to use it, 1 to [`SkillSpec::MAX_DESCRIPTION`] characters; the only text routed on.
    pub description: String,
    /// The Markdown the agent adds to a run the skill was chosen for.
    pub instructions: String,
    /// The other front-matter keys (`license`, ...).
    pub metadata: BTreeMap<String, String>,
    /// Paths of the files beside `SKILL.md`, relative to its folder (informational:
    /// the files themselves are not stored).
    pub files: Vec<String>,
}

impl SkillSpec {
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

    /// Checks the skill with the rules `toolbelt_router::Skill::parse` applies to `SKILL.md`.
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

    /// SHA-256 (hex) of the skill's JSON (name, description, instructions, metadata and files,
    /// in that order): equal hashes mean equal content. The store keeps it beside the skill and
    /// compares it on [`Skills::put`].
    pub fn content_hash(&self) -> String {
        // A struct of strings, a string map and a list of strings always serialises.
        let text = serde_json::to_string(self).unwrap_or_default();
        let digest = Sha256::digest(text.as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
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

fn skill_from_row(row: &AnyRow) -> Result<Stored<SkillSpec>> {
    let name: String = row.try_get("name")?;
    Ok(Stored {
        value: SkillSpec {
            description: row.try_get("description")?,
            instructions: row.try_get("instructions")?,
            metadata: decode_json(row, "metadata", Entity::Skill, &name)?,
            files: decode_json(row, "files", Entity::Skill, &name)?,
            name,
        },
        revision: row.try_get("revision")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        changed_by: row.try_get("changed_by")?,
    })
}

const SELECT_SKILL: &str = "SELECT name, description, instructions, metadata, files, revision, created_at, updated_at, changed_by FROM skills";

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
    /// Creates the skill `spec.name` at revision 1, or replaces its content when it differs
    /// (the revision goes up by one and `changed_by` is recorded); the same content writes
    /// nothing.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] naming the field (`name`, `description`, `files[i]`) when the
    /// skill breaks the Agent Skills rules; nothing is written then.
    pub async fn put(
        &self,
        spec: &SkillSpec,
        changed_by: &str,
    ) -> Result<(Stored<SkillSpec>, SkillChange)> {
        spec.validate()?;
        let hash = spec.content_hash();
        let at = now_ms();
        let mut tx = self.store.begin().await?;
        let stored: Option<String> =
            sqlx::query_scalar("SELECT content_hash FROM skills WHERE name = $1")
                .bind(&spec.name)
                .fetch_optional(&mut **tx)
                .await?;
        let change = match stored {
            Some(stored) if stored == hash => SkillChange::Unchanged,
            Some(_) => {
                sqlx::query(
                    "UPDATE skills SET description = $1, instructions = $2, metadata = $3, files = $4, content_hash = $5, updated_at = $6, changed_by = $7, revision = revision + 1 WHERE name = $8",
                )
                .bind(&spec.description)
                .bind(&spec.instructions)
                .bind(to_json(&spec.metadata, "metadata")?)
                .bind(to_json(&spec.files, "files")?)
                .bind(&hash)
                .bind(at)
                .bind(changed_by)
                .bind(&spec.name)
                .execute(&mut **tx)
                .await?;
                SkillChange::Updated
            }
            None => {
                sqlx::query(
                    "INSERT INTO skills (name, description, instructions, metadata, files, content_hash, created_at, updated_at, revision, changed_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $7, 1, $8)",
                )
                .bind(&spec.name)
                .bind(&spec.description)
                .bind(&spec.instructions)
                .bind(to_json(&spec.metadata, "metadata")?)
                .bind(to_json(&spec.files, "files")?)
                .bind(&hash)
                .bind(at)
                .bind(changed_by)
                .execute(&mut **tx)
                .await?;
                SkillChange::Created
            }
        };
        if change != SkillChange::Unchanged {
            record_change(&mut tx, "skill", &spec.name, "upsert").await?;
        }
        tx.commit().await?;
        Ok((self.get(&spec.name).await?, change))
    }

    /// The skill `name`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub async fn get(&self, name: &str) -> Result<Stored<SkillSpec>> {
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
    pub async fn list(&self) -> Result<Vec<Stored<SkillSpec>>> {
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
