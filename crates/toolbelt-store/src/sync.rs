//! Start-up sync of compiled tools: one SELECT of hashes when nothing changed, batched inserts
//! into an empty database, a new version for a changed tool, `missing` for a vanished one.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use sqlx::Row;
use toolbelt_core::ToolSpec;

use crate::error::Result;
use crate::store::{Engine, json_arrays, now_ms, record_change, statement_bytes, to_json};
use crate::tools::Tools;
use crate::tools::{Author, ToolDef, ToolSource, insert_version, validate_def};

/// What [`Tools::sync_compiled`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SyncReport {
    /// Tools stored for the first time.
    pub created: Vec<String>,
    /// Tools whose spec changed: a new version each.
    pub updated: Vec<String>,
    /// Tools marked missing: stored as compiled but absent from the running code.
    pub missing: Vec<String>,
    /// Tools that were missing and are back (their spec may also have changed).
    pub restored: Vec<String>,
    /// Compiled tools whose name a non-compiled stored tool already has; left untouched.
    pub clashes: Vec<String>,
    /// Tools already stored exactly so.
    pub unchanged: usize,
}

impl SyncReport {
    /// Whether the sync wrote nothing.
    pub fn is_noop(&self) -> bool {
        self.created.is_empty()
            && self.updated.is_empty()
            && self.missing.is_empty()
            && self.restored.is_empty()
    }
}

impl Tools<'_> {
    /// Upserts the compiled-in tools `specs` (usually `Registry::discovered()`'s specs).
    ///
    /// Unchanged tools cost nothing but one SELECT of all compiled tools' hashes. A changed
    /// spec becomes a new current version; a stored compiled tool absent from `specs` is marked
    /// `missing` (never deleted). Runs in one transaction.
    ///
    /// # Errors
    /// [`crate::StoreError::Invalid`] naming the tool whose spec is invalid (nothing is written),
    /// or the database's error.
    pub async fn sync_compiled(&self, specs: &[ToolSpec], changed_by: &str) -> Result<SyncReport> {
        let rows =
            sqlx::query("SELECT name, source, current_hash, missing, latest_version FROM tools")
                .fetch_all(self.store.pool())
                .await?;
        struct Stored {
            compiled: bool,
            hash: String,
            missing: bool,
            latest: i64,
        }
        let mut stored = BTreeMap::new();
        for row in &rows {
            stored.insert(
                row.try_get::<String, _>("name")?,
                Stored {
                    compiled: row.try_get::<String, _>("source")? == "compiled",
                    hash: row.try_get("current_hash")?,
                    missing: row.try_get::<i64, _>("missing")? != 0,
                    latest: row.try_get("latest_version")?,
                },
            );
        }
        let mut report = SyncReport::default();
        let mut new = Vec::new();
        let mut changed = Vec::new();
        let mut seen = BTreeSet::new();
        for spec in specs {
            let def = ToolDef::new(spec.clone(), ToolSource::Compiled);
            let name = spec.name.as_str().to_owned();
            seen.insert(name.clone());
            let hash = def.hash();
            match stored.get(&name) {
                None => {
                    validate_def(&def)?;
                    new.push((def, hash));
                }
                Some(s) if !s.compiled => report.clashes.push(name),
                Some(s) if s.hash == hash && !s.missing => report.unchanged += 1,
                Some(s) if s.hash == hash => {
                    report.restored.push(name.clone());
                    changed.push((def, hash, None));
                }
                Some(s) => {
                    validate_def(&def)?;
                    if s.missing {
                        report.restored.push(name.clone());
                    }
                    report.updated.push(name.clone());
                    changed.push((def, hash, Some(s.latest + 1)));
                }
            }
        }
        let vanished: Vec<String> = stored
            .iter()
            .filter(|(name, s)| s.compiled && !s.missing && !seen.contains(*name))
            .map(|(name, _)| name.clone())
            .collect();
        if new.is_empty() && changed.is_empty() && vanished.is_empty() {
            return Ok(report);
        }
        let at = now_ms();
        let mut tx = self.store.begin().await?;
        if !new.is_empty() {
            insert_new_tools(&mut tx, self.store.engine(), &new, changed_by, at).await?;
        }
        let author = Author {
            changed_by,
            note: Some("start-up sync"),
        };
        for (def, hash, version) in &changed {
            let name = def.name();
            match version {
                Some(version) => {
                    insert_version(&mut tx, def, *version, hash, &author, at).await?;
                    sqlx::query(
                        "UPDATE tools SET current_version = $1, latest_version = $1, current_hash = $2, missing = 0, revision = revision + 1, updated_at = $3, changed_by = $4 WHERE name = $5",
                    )
                    .bind(*version)
                    .bind(hash.as_str())
                    .bind(at)
                    .bind(changed_by)
                    .bind(name)
                    .execute(&mut **tx)
                    .await?;
                }
                None => {
                    sqlx::query(
                        "UPDATE tools SET missing = 0, revision = revision + 1, updated_at = $1, changed_by = $2 WHERE name = $3",
                    )
                    .bind(at)
                    .bind(changed_by)
                    .bind(name)
                    .execute(&mut **tx)
                    .await?;
                }
            }
            record_change(&mut tx, "tool", name, "upsert").await?;
        }
        for name in &vanished {
            sqlx::query(
                "UPDATE tools SET missing = 1, revision = revision + 1, updated_at = $1, changed_by = $2 WHERE name = $3",
            )
            .bind(at)
            .bind(changed_by)
            .bind(name.as_str())
            .execute(&mut **tx)
            .await?;
            record_change(&mut tx, "tool", name, "upsert").await?;
        }
        if !new.is_empty() {
            record_change(&mut tx, "tool", "*", "sync").await?;
        }
        tx.commit().await?;
        report.created = new
            .iter()
            .map(|(d, _)| d.spec.name.as_str().to_owned())
            .collect();
        report.missing = vanished;
        Ok(report)
    }
}

/// Inserts new compiled tools and their first versions: the rows passed as one JSON
/// parameter and unpacked by the database (as the run log does), one statement per table on
/// SQLite and per 12 KiB of rows on Postgres (see [`statement_bytes`]), not one per tool.
async fn insert_new_tools(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    engine: Engine,
    new: &[(ToolDef, String)],
    changed_by: &str,
    at: i64,
) -> Result<()> {
    let mut tools = Vec::with_capacity(new.len());
    let mut versions = Vec::with_capacity(new.len());
    for (def, hash) in new {
        let spec = &def.spec;
        tools.push(to_json(
            &serde_json::json!([spec.name.as_str(), hash]),
            "tools",
        )?);
        versions.push(to_json(
            &serde_json::json!([
                spec.name.as_str(),
                to_json(spec, "spec")?,
                spec.description,
                to_json(&spec.tags, "tags")?,
                to_json(&spec.kind, "kind")?.trim_matches('"'),
                to_json(&spec.policy, "policy")?,
                hash,
            ]),
            "tool versions",
        )?);
    }
    let budget = statement_bytes(engine);
    let (rows, col) = match engine {
        Engine::Sqlite => ("json_each($1) ORDER BY key", "value ->> "),
        Engine::Postgres => (
            "jsonb_array_elements($1::jsonb) WITH ORDINALITY AS t(e, n) ORDER BY n",
            "e ->> ",
        ),
    };
    let c = |i: usize| format!("{col}{i}");
    let tools_sql = format!(
        "INSERT INTO tools (name, source, current_version, latest_version, current_hash, enabled, missing, availability, revision, created_at, updated_at, changed_by) \
         SELECT {}, 'compiled', 1, 1, {}, 1, 0, '{{}}', 1, $2, $2, $3 FROM {rows}",
        c(0),
        c(1)
    );
    for array in json_arrays(&tools, budget, usize::MAX) {
        sqlx::query(sqlx::AssertSqlSafe(tools_sql.as_str()))
            .bind(array)
            .bind(at)
            .bind(changed_by)
            .execute(&mut **tx)
            .await?;
    }
    let versions_sql = format!(
        "INSERT INTO tool_versions (tool_name, version, spec, definition, description, tags, kind, policy, spec_hash, changed_by, changed_at, note) \
         SELECT {}, 1, {}, NULL, {}, {}, {}, {}, {}, $3, $2, 'start-up sync' FROM {rows}",
        c(0),
        c(1),
        c(2),
        c(3),
        c(4),
        c(5),
        c(6)
    );
    for array in json_arrays(&versions, budget, usize::MAX) {
        sqlx::query(sqlx::AssertSqlSafe(versions_sql.as_str()))
            .bind(array)
            .bind(at)
            .bind(changed_by)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}
