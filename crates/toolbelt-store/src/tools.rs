//! Tools and their versions: [`ToolDraft`] in, [`ToolRecord`] and [`ToolVersion`] out.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::Row;
use sqlx::any::AnyRow;
use toolbelt_core::ToolSpec;

use crate::availability::Availability;
use crate::error::{Entity, Result, StoreError};
use crate::revision::{Revision, Table, check_revision};
use crate::store::{
    Engine, Store, WriteTx, decode_json, flag, get_flag, now_ms, record_change, to_json,
};

/// Where a stored tool comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolSource {
    /// A `#[tool]` or hand-written tool compiled into the process; synced at start-up.
    Compiled,
    /// An HTTP or command tool defined as data.
    Declarative,
    /// A tool imported from an MCP server.
    Mcp,
    /// A stored agent used as a tool.
    Agent,
}

impl ToolSource {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Compiled => "compiled",
            Self::Declarative => "declarative",
            Self::Mcp => "mcp",
            Self::Agent => "agent",
        }
    }

    /// Parses the stored spelling.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] naming the allowed values.
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "compiled" => Ok(Self::Compiled),
            "declarative" => Ok(Self::Declarative),
            "mcp" => Ok(Self::Mcp),
            "agent" => Ok(Self::Agent),
            other => Err(StoreError::invalid(
                "source",
                format!("`{other}` is not one of compiled, declarative, mcp, agent"),
            )),
        }
    }
}

/// A tool definition to create or update.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolDraft {
    /// Name, description, schema, tags, policy.
    pub spec: ToolSpec,
    /// Where the tool comes from.
    pub source: ToolSource,
    /// What a factory needs to build the tool (HTTP request template, command, agent name, MCP
    /// server); `None` for compiled tools. Never holds secret values, only their names.
    pub definition: Option<Value>,
    /// Who made the change (user, token name, `sync`).
    pub changed_by: String,
    /// Why, shown in `tools versions`.
    pub note: Option<String>,
    /// Who may use the tool, and when; `None` keeps the stored rules (unrestricted on create).
    /// Rules are not versioned: they belong to the tool, not to one of its versions.
    pub availability: Option<Availability>,
}

impl ToolDraft {
    /// A draft of `spec` from `source`, changed by `changed_by`.
    pub fn new(spec: ToolSpec, source: ToolSource, changed_by: impl Into<String>) -> Self {
        Self {
            spec,
            source,
            definition: None,
            changed_by: changed_by.into(),
            note: None,
            availability: None,
        }
    }

    /// Sets the availability rules.
    pub fn with_availability(mut self, availability: Availability) -> Self {
        self.availability = Some(availability);
        self
    }

    /// Sets the factory definition.
    pub fn with_definition(mut self, definition: Value) -> Self {
        self.definition = Some(definition);
        self
    }

    /// Sets the change note.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// The content hash of spec + definition: equal hashes mean nothing changed.
    pub fn hash(&self) -> String {
        spec_hash(&self.spec, self.definition.as_ref())
    }
}

/// A stored tool's state without its spec: what a list of every tool shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolState {
    /// The tool's name.
    pub name: String,
    /// Where it comes from.
    pub source: ToolSource,
    /// The version in use.
    pub current_version: i64,
    /// The newest version.
    pub latest_version: i64,
    /// Whether it is switched on.
    pub enabled: bool,
    /// Whether its code is missing from this binary.
    pub missing: bool,
    /// Which agents may use it.
    pub availability: Availability,
}

/// A stored tool with its current version.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolRecord {
    /// The tool's name.
    pub name: String,
    /// Where it comes from.
    pub source: ToolSource,
    /// The version agents that do not pin one get.
    pub current_version: i64,
    /// The newest version ever written.
    pub latest_version: i64,
    /// Whether it may be offered at all.
    pub enabled: bool,
    /// A compiled tool the running code no longer has.
    pub missing: bool,
    /// Who may use it, and when.
    pub availability: Availability,
    /// Bumped by every change; pass it back to update.
    pub revision: i64,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub updated_at: i64,
    /// Who made the last change.
    pub changed_by: String,
    /// Spec of the current version.
    pub spec: ToolSpec,
    /// Factory definition of the current version.
    pub definition: Option<Value>,
    /// Content hash of the current version.
    pub spec_hash: String,
}

/// One version of a tool, kept forever.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolVersion {
    /// The tool.
    pub tool_name: String,
    /// 1, 2, 3, ...
    pub version: i64,
    /// The spec as written.
    pub spec: ToolSpec,
    /// The factory definition as written.
    pub definition: Option<Value>,
    /// Content hash.
    pub spec_hash: String,
    /// Who wrote it.
    pub changed_by: String,
    /// Unix ms.
    pub changed_at: i64,
    /// Why.
    pub note: Option<String>,
}

const SELECT_TOOL: &str = "SELECT t.name, t.source, t.current_version, t.latest_version, t.current_hash, t.enabled, t.missing, t.availability, t.revision, t.created_at, t.updated_at, t.changed_by, v.spec, v.definition FROM tools t JOIN tool_versions v ON v.tool_name = t.name AND v.version = t.current_version WHERE t.name = $1";
/// [`SELECT_TOOL`] without its `WHERE`.
const SELECT_TOOLS_BASE: &str = "SELECT t.name, t.source, t.current_version, t.latest_version, t.current_hash, t.enabled, t.missing, t.availability, t.revision, t.created_at, t.updated_at, t.changed_by, v.spec, v.definition FROM tools t JOIN tool_versions v ON v.tool_name = t.name AND v.version = t.current_version";

/// How many values one `IN (...)` list binds: far below both engines' limits on bound
/// parameters (SQLite 32,766, Postgres 65,535).
pub(crate) const IN_LIST_CHUNK: usize = 500;

/// `$1, $2, ..., $n`: the placeholders of an `IN` list (both engines number them).
pub(crate) fn placeholders(n: usize) -> String {
    (1..=n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}
const SELECT_TOOLS: &str = "SELECT t.name, t.source, t.current_version, t.latest_version, t.current_hash, t.enabled, t.missing, t.availability, t.revision, t.created_at, t.updated_at, t.changed_by, v.spec, v.definition FROM tools t JOIN tool_versions v ON v.tool_name = t.name AND v.version = t.current_version ORDER BY t.name";

pub(crate) fn tool_from_row(row: &AnyRow) -> Result<ToolRecord> {
    let name: String = row.try_get("name")?;
    let definition: Option<String> = row.try_get("definition")?;
    let definition = definition
        .map(|text| serde_json::from_str(&text))
        .transpose()
        .map_err(|e| StoreError::Corrupt {
            entity: Entity::Tool,
            name: name.clone(),
            field: "definition",
            reason: e.to_string(),
        })?;
    Ok(ToolRecord {
        source: ToolSource::parse(&row.try_get::<String, _>("source")?)?,
        current_version: row.try_get("current_version")?,
        latest_version: row.try_get("latest_version")?,
        spec_hash: row.try_get("current_hash")?,
        enabled: get_flag(row, "enabled")?,
        missing: get_flag(row, "missing")?,
        availability: decode_json(row, "availability", Entity::Tool, &name)?,
        revision: row.try_get("revision")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        changed_by: row.try_get("changed_by")?,
        spec: decode_json(row, "spec", Entity::Tool, &name)?,
        definition,
        name,
    })
}

fn version_from_row(row: &AnyRow) -> Result<ToolVersion> {
    let tool_name: String = row.try_get("tool_name")?;
    let definition: Option<String> = row.try_get("definition")?;
    let definition = definition
        .map(|text| serde_json::from_str(&text))
        .transpose()
        .map_err(|e| StoreError::Corrupt {
            entity: Entity::ToolVersion,
            name: tool_name.clone(),
            field: "definition",
            reason: e.to_string(),
        })?;
    Ok(ToolVersion {
        version: row.try_get("version")?,
        spec: decode_json(row, "spec", Entity::ToolVersion, &tool_name)?,
        spec_hash: row.try_get("spec_hash")?,
        changed_by: row.try_get("changed_by")?,
        changed_at: row.try_get("changed_at")?,
        note: row.try_get("note")?,
        definition,
        tool_name,
    })
}

/// SHA-256 (hex) of the canonical JSON of `spec` and `definition` (object keys sorted).
pub fn spec_hash(spec: &ToolSpec, definition: Option<&Value>) -> String {
    let spec = serde_json::to_value(spec).unwrap_or(Value::Null);
    let mut hasher = Sha256::new();
    write_canonical(&mut hasher, &spec);
    hasher.update(b"|");
    if let Some(definition) = definition {
        write_canonical(&mut hasher, definition);
    }
    let digest = hasher.finalize();
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn write_canonical(hasher: &mut Sha256, value: &Value) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            hasher.update(b"{");
            for key in keys {
                hasher.update(serde_json::to_string(key).unwrap_or_default().as_bytes());
                hasher.update(b":");
                if let Some(v) = map.get(key) {
                    write_canonical(hasher, v);
                }
                hasher.update(b",");
            }
            hasher.update(b"}");
        }
        Value::Array(items) => {
            hasher.update(b"[");
            for item in items {
                write_canonical(hasher, item);
                hasher.update(b",");
            }
            hasher.update(b"]");
        }
        other => hasher.update(other.to_string().as_bytes()),
    }
}

/// Checks what the store itself can check of a draft: tags, that the parameters are an object
/// schema and valid JSON Schema, and that a non-compiled tool has a definition object.
pub(crate) fn validate_draft(draft: &ToolDraft) -> Result<()> {
    if let Some(availability) = &draft.availability {
        availability.validate()?;
    }
    draft
        .spec
        .validate()
        .map_err(|e| StoreError::invalid("spec", e.to_string()))?;
    if let Err(e) = jsonschema::meta::validate(&draft.spec.parameters) {
        return Err(StoreError::invalid(
            "parameters",
            format!("not a valid JSON Schema: {e}"),
        ));
    }
    match (&draft.source, &draft.definition) {
        (ToolSource::Compiled, _) | (_, Some(Value::Object(_))) => Ok(()),
        (_, Some(_)) => Err(StoreError::invalid("definition", "must be a JSON object")),
        (source, None) => Err(StoreError::invalid(
            "definition",
            format!("a {} tool needs a definition", source.as_str()),
        )),
    }
}

pub(crate) async fn insert_version(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    draft: &ToolDraft,
    version: i64,
    hash: &str,
    at: i64,
) -> Result<()> {
    let spec = &draft.spec;
    let definition = draft
        .definition
        .as_ref()
        .map(|d| to_json(d, "definition"))
        .transpose()?;
    sqlx::query(
        "INSERT INTO tool_versions (tool_name, version, spec, definition, description, tags, kind, policy, spec_hash, changed_by, changed_at, note) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(spec.name.as_str())
    .bind(version)
    .bind(to_json(spec, "spec")?)
    .bind(definition)
    .bind(spec.description.as_str())
    .bind(to_json(&spec.tags, "tags")?)
    .bind(to_json(&spec.kind, "kind")?.trim_matches('"').to_owned())
    .bind(to_json(&spec.policy, "policy")?)
    .bind(hash)
    .bind(draft.changed_by.as_str())
    .bind(at)
    .bind(draft.note.as_deref())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Tools and their versions: the operations of that aggregate, from [`Store::tools`].
#[derive(Debug, Clone, Copy)]
pub struct Tools<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// Tools and their versions.
    pub fn tools(&self) -> Tools<'_> {
        Tools { store: self }
    }
}

impl Tools<'_> {
    /// Creates a tool at version 1.
    ///
    /// # Errors
    /// [`StoreError::AlreadyExists`] when the name is taken, [`StoreError::Invalid`] for a bad
    /// spec or schema; nothing is written then.
    pub async fn create(&self, draft: &ToolDraft) -> Result<ToolRecord> {
        validate_draft(draft)?;
        let name = draft.spec.name.as_str();
        let hash = draft.hash();
        let at = now_ms();
        let mut tx = self.store.begin().await?;
        let exists: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tools WHERE name = $1")
            .bind(name)
            .fetch_one(&mut **tx)
            .await?;
        if exists > 0 {
            return Err(StoreError::AlreadyExists {
                entity: Entity::Tool,
                name: name.to_owned(),
            });
        }
        sqlx::query(
            "INSERT INTO tools (name, source, current_version, latest_version, current_hash, enabled, missing, availability, revision, created_at, updated_at, changed_by) VALUES ($1, $2, 1, 1, $3, 1, 0, $6, 1, $4, $4, $5)",
        )
        .bind(name)
        .bind(draft.source.as_str())
        .bind(hash.as_str())
        .bind(at)
        .bind(draft.changed_by.as_str())
        .bind(to_json(
            &draft.availability.clone().unwrap_or_default(),
            "availability",
        )?)
        .execute(&mut **tx)
        .await?;
        insert_version(&mut tx, draft, 1, &hash, at).await?;
        self.commit_change(tx, name).await
    }

    /// Writes a new version of an existing tool and makes it current.
    ///
    /// A draft equal to the current version (same hash) writes nothing and returns the record.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] when the tool's revision is not `expected_revision`,
    /// [`StoreError::NotFound`], [`StoreError::Invalid`].
    pub async fn update(
        &self,
        draft: &ToolDraft,
        expected_revision: Revision,
    ) -> Result<ToolRecord> {
        validate_draft(draft)?;
        let name = draft.spec.name.as_str();
        let hash = draft.hash();
        let at = now_ms();
        let availability = draft
            .availability
            .as_ref()
            .map(|a| to_json(a, "availability"))
            .transpose()?;
        let mut tx = self.store.begin().await?;
        // One read under the row lock (SQLite's BEGIN IMMEDIATE holds the database), the
        // revision checked here rather than by a separate UPDATE: four statements per
        // update instead of eight, and no read-back after the commit.
        let read = match self.store.engine() {
            Engine::Sqlite => {
                "SELECT latest_version, current_hash, source, revision FROM tools WHERE name = $1"
            }
            Engine::Postgres => {
                "SELECT latest_version, current_hash, source, revision FROM tools WHERE name = $1 FOR UPDATE"
            }
        };
        let row = sqlx::query(read)
            .bind(name)
            .fetch_optional(&mut **tx)
            .await?
            .ok_or_else(|| StoreError::not_found(Entity::Tool, name))?;
        let found: i64 = row.try_get("revision")?;
        if let Revision::Exactly(expected) = expected_revision
            && expected != found
        {
            return Err(StoreError::Conflict {
                entity: Entity::Tool,
                name: name.to_owned(),
                expected,
                found,
            });
        }
        let source: String = row.try_get("source")?;
        if source != draft.source.as_str() {
            return Err(source_mismatch(name, &source, draft.source));
        }
        let current_hash: String = row.try_get("current_hash")?;
        if current_hash == hash {
            // Same spec: only a new availability (if any) is written.
            let Some(availability) = availability else {
                tx.rollback().await?;
                return self.get(name).await;
            };
            sqlx::query(
                "UPDATE tools SET availability = $1, revision = revision + 1, updated_at = $2, changed_by = $3 WHERE name = $4",
            )
            .bind(availability)
            .bind(at)
            .bind(draft.changed_by.as_str())
            .bind(name)
            .execute(&mut **tx)
            .await?;
            return self.commit_change(tx, name).await;
        }
        let version = row.try_get::<i64, _>("latest_version")? + 1;
        insert_version(&mut tx, draft, version, &hash, at).await?;
        let row = sqlx::query(
            "UPDATE tools SET current_version = $1, latest_version = $1, current_hash = $2, missing = 0, updated_at = $3, changed_by = $4, revision = revision + 1, availability = COALESCE($5, availability) WHERE name = $6 RETURNING enabled, availability, revision, created_at",
        )
        .bind(version)
        .bind(hash.as_str())
        .bind(at)
        .bind(draft.changed_by.as_str())
        .bind(availability)
        .bind(name)
        .fetch_one(&mut **tx)
        .await?;
        let record = ToolRecord {
            name: name.to_owned(),
            source: draft.source,
            current_version: version,
            latest_version: version,
            enabled: get_flag(&row, "enabled")?,
            missing: false,
            availability: decode_json(&row, "availability", Entity::Tool, name)?,
            revision: row.try_get("revision")?,
            created_at: row.try_get("created_at")?,
            updated_at: at,
            changed_by: draft.changed_by.clone(),
            spec: draft.spec.clone(),
            definition: draft.definition.clone(),
            spec_hash: hash,
        };
        record_change(&mut tx, "tool", name, "upsert").await?;
        tx.commit().await?;
        Ok(record)
    }

    /// The tool `name` with its current version.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub async fn get(&self, name: &str) -> Result<ToolRecord> {
        let row = sqlx::query(SELECT_TOOL)
            .bind(name)
            .fetch_optional(self.store.pool())
            .await?
            .ok_or_else(|| StoreError::not_found(Entity::Tool, name))?;
        tool_from_row(&row)
    }

    /// Every tool, by name.
    ///
    /// # Errors
    /// The database's error.
    pub async fn list(&self) -> Result<Vec<ToolRecord>> {
        let rows = sqlx::query(SELECT_TOOLS)
            .fetch_all(self.store.pool())
            .await?;
        rows.iter().map(tool_from_row).collect()
    }

    /// The tools among `names` that exist, with their current versions (missing names are left
    /// out): one statement per [`IN_LIST_CHUNK`] names, so reading a few changed tools costs
    /// the same whatever the catalog holds.
    ///
    /// # Errors
    /// The database's error.
    pub(crate) async fn named(&self, names: &[String]) -> Result<Vec<ToolRecord>> {
        let mut records = Vec::with_capacity(names.len());
        for chunk in names.chunks(IN_LIST_CHUNK) {
            let sql = format!(
                "{} WHERE t.name IN ({})",
                SELECT_TOOLS_BASE,
                placeholders(chunk.len())
            );
            // Only numbered placeholders are formatted in; the values are bound.
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for name in chunk {
                query = query.bind(name.as_str());
            }
            for row in query.fetch_all(self.store.pool()).await? {
                records.push(tool_from_row(&row)?);
            }
        }
        Ok(records)
    }

    /// Every tool's state, by name, without reading specs (one table, no join).
    ///
    /// # Errors
    /// The database's error, or an availability that no longer decodes.
    pub async fn states(&self) -> Result<Vec<ToolState>> {
        let rows = sqlx::query(
            "SELECT name, source, current_version, latest_version, enabled, missing, availability FROM tools ORDER BY name",
        )
        .fetch_all(self.store.pool())
        .await?;
        rows.iter()
            .map(|row| {
                let name: String = row.try_get("name")?;
                Ok(ToolState {
                    source: ToolSource::parse(&row.try_get::<String, _>("source")?)?,
                    current_version: row.try_get("current_version")?,
                    latest_version: row.try_get("latest_version")?,
                    enabled: get_flag(row, "enabled")?,
                    missing: get_flag(row, "missing")?,
                    availability: decode_json(row, "availability", Entity::Tool, &name)?,
                    name,
                })
            })
            .collect()
    }

    /// Every version of `name`, oldest first.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when the tool does not exist.
    pub async fn versions(&self, name: &str) -> Result<Vec<ToolVersion>> {
        let rows = sqlx::query(
            "SELECT tool_name, version, spec, definition, spec_hash, changed_by, changed_at, note FROM tool_versions WHERE tool_name = $1 ORDER BY version",
        )
        .bind(name)
        .fetch_all(self.store.pool())
        .await?;
        if rows.is_empty() {
            return Err(StoreError::not_found(Entity::Tool, name));
        }
        rows.iter().map(version_from_row).collect()
    }

    /// Version `version` of `name`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] naming `name@version`.
    pub async fn version(&self, name: &str, version: i64) -> Result<ToolVersion> {
        let row = sqlx::query(
            "SELECT tool_name, version, spec, definition, spec_hash, changed_by, changed_at, note FROM tool_versions WHERE tool_name = $1 AND version = $2",
        )
        .bind(name)
        .bind(version)
        .fetch_optional(self.store.pool())
        .await?
        .ok_or_else(|| StoreError::not_found(Entity::ToolVersion, format!("{name}@{version}")))?;
        version_from_row(&row)
    }

    /// Makes an older (or newer) stored version current again; later updates continue from the
    /// latest version number.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for a version that does not exist, [`StoreError::Conflict`].
    pub async fn rollback(
        &self,
        name: &str,
        version: i64,
        expected_revision: Revision,
        changed_by: &str,
    ) -> Result<ToolRecord> {
        let mut tx = self.store.begin().await?;
        check_revision(&mut tx, Table::Tools, name, expected_revision).await?;
        let hash: Option<String> = sqlx::query_scalar(
            "SELECT spec_hash FROM tool_versions WHERE tool_name = $1 AND version = $2",
        )
        .bind(name)
        .bind(version)
        .fetch_optional(&mut **tx)
        .await?;
        let hash = hash.ok_or_else(|| {
            StoreError::not_found(Entity::ToolVersion, format!("{name}@{version}"))
        })?;
        sqlx::query(
            "UPDATE tools SET current_version = $1, current_hash = $2, updated_at = $3, changed_by = $4 WHERE name = $5",
        )
        .bind(version)
        .bind(hash)
        .bind(now_ms())
        .bind(changed_by)
        .bind(name)
        .execute(&mut **tx)
        .await?;
        self.commit_change(tx, name).await
    }

    /// Records the change of `name` in the feed, commits, and reads the tool back.
    async fn commit_change(&self, mut tx: WriteTx, name: &str) -> Result<ToolRecord> {
        record_change(&mut tx, "tool", name, "upsert").await?;
        tx.commit().await?;
        self.get(name).await
    }

    /// Enables or disables a tool (a disabled tool is never offered to a model).
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Conflict`].
    pub async fn set_enabled(
        &self,
        name: &str,
        enabled: bool,
        expected_revision: Revision,
        changed_by: &str,
    ) -> Result<ToolRecord> {
        let mut tx = self.store.begin().await?;
        check_revision(&mut tx, Table::Tools, name, expected_revision).await?;
        sqlx::query(
            "UPDATE tools SET enabled = $1, updated_at = $2, changed_by = $3 WHERE name = $4",
        )
        .bind(flag(enabled))
        .bind(now_ms())
        .bind(changed_by)
        .bind(name)
        .execute(&mut **tx)
        .await?;
        self.commit_change(tx, name).await
    }

    /// Replaces who may use a tool, and when.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Conflict`], [`StoreError::Invalid`] for a bad rule.
    pub async fn set_availability(
        &self,
        name: &str,
        availability: &Availability,
        expected_revision: Revision,
        changed_by: &str,
    ) -> Result<ToolRecord> {
        availability.validate()?;
        let mut tx = self.store.begin().await?;
        check_revision(&mut tx, Table::Tools, name, expected_revision).await?;
        sqlx::query(
            "UPDATE tools SET availability = $1, updated_at = $2, changed_by = $3 WHERE name = $4",
        )
        .bind(to_json(availability, "availability")?)
        .bind(now_ms())
        .bind(changed_by)
        .bind(name)
        .execute(&mut **tx)
        .await?;
        self.commit_change(tx, name).await
    }

    /// Deletes a tool and its history.
    ///
    /// # Errors
    /// [`StoreError::InUse`] while agents bind it (nothing is deleted), [`StoreError::NotFound`],
    /// [`StoreError::Conflict`].
    pub async fn delete(&self, name: &str, expected_revision: Revision) -> Result<()> {
        let mut tx = self.store.begin().await?;
        check_revision(&mut tx, Table::Tools, name, expected_revision).await?;
        let agents: Vec<String> = sqlx::query_scalar(
            "SELECT agent_name FROM agent_tools WHERE tool_name = $1 ORDER BY agent_name",
        )
        .bind(name)
        .fetch_all(&mut **tx)
        .await?;
        if !agents.is_empty() {
            return Err(StoreError::InUse {
                name: name.to_owned(),
                agents,
            });
        }
        sqlx::query("DELETE FROM tool_versions WHERE tool_name = $1")
            .bind(name)
            .execute(&mut **tx)
            .await?;
        sqlx::query("DELETE FROM tools WHERE name = $1")
            .bind(name)
            .execute(&mut **tx)
            .await?;
        record_change(&mut tx, "tool", name, "delete").await?;
        tx.commit().await?;
        Ok(())
    }
}

/// The error for a draft whose source differs from the stored tool's.
fn source_mismatch(name: &str, stored: &str, draft: ToolSource) -> StoreError {
    StoreError::invalid(
        "source",
        format!(
            "tool `{name}` is a {stored} tool; a {} definition cannot replace it",
            draft.as_str()
        ),
    )
}
