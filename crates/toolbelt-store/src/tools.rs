//! Tools and their versions: [`ToolDef`] in, [`Stored<ToolEntry>`](crate::Stored) and
//! [`ToolVersion`] out.

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
use crate::stored::Stored;

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

/// What a tool is: its spec, where it comes from, what builds it and who may use it. Written
/// with [`Tools::create`] and [`Tools::update`]; read back inside a [`ToolEntry`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolDef {
    /// Name, description, schema, tags, policy.
    pub spec: ToolSpec,
    /// Where the tool comes from.
    pub source: ToolSource,
    /// What a factory needs to build the tool (HTTP request template, command, agent name, MCP
    /// server); `None` for compiled tools. Never holds secret values, only their names.
    pub definition: Option<Value>,
    /// Who may use the tool, and when (unrestricted by default). Rules are not versioned: they
    /// belong to the tool, not to one of its versions, so [`Tools::create`] writes them and
    /// [`Tools::update`] leaves the stored ones; [`Tools::set_availability`] replaces them.
    pub availability: Availability,
}

impl ToolDef {
    /// `spec` from `source`, with no definition and no availability rules.
    pub fn new(spec: ToolSpec, source: ToolSource) -> Self {
        Self {
            spec,
            source,
            definition: None,
            availability: Availability::default(),
        }
    }

    /// Sets the availability rules.
    #[must_use]
    pub fn with_availability(mut self, availability: Availability) -> Self {
        self.availability = availability;
        self
    }

    /// Sets the factory definition.
    #[must_use]
    pub fn with_definition(mut self, definition: Value) -> Self {
        self.definition = Some(definition);
        self
    }

    /// The tool's name (the spec's).
    pub fn name(&self) -> &str {
        self.spec.name.as_str()
    }

    /// The content hash of spec + definition: equal hashes mean the same version.
    pub fn hash(&self) -> String {
        spec_hash(&self.spec, self.definition.as_ref())
    }
}

/// A stored tool: its [`ToolDef`] at the current version, and the state of its versions. The
/// store hands it out as [`Stored<ToolEntry>`](crate::Stored); it derefs to the [`ToolDef`], so
/// `entry.spec` reads the current spec. Serialised, the def's fields and the state stand side
/// by side in one object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolEntry {
    /// The tool as its current version defines it, with the tool's availability rules.
    #[serde(flatten)]
    pub def: ToolDef,
    /// The version agents that do not pin one get.
    pub current_version: i64,
    /// The newest version ever written.
    pub latest_version: i64,
    /// Whether it may be offered at all.
    pub enabled: bool,
    /// A compiled tool the running code no longer has.
    pub missing: bool,
    /// Content hash of the current version.
    pub spec_hash: String,
}

impl std::ops::Deref for ToolEntry {
    type Target = ToolDef;
    fn deref(&self) -> &ToolDef {
        &self.def
    }
}

impl std::ops::DerefMut for ToolEntry {
    fn deref_mut(&mut self) -> &mut ToolDef {
        &mut self.def
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

pub(crate) fn tool_from_row(row: &AnyRow) -> Result<Stored<ToolEntry>> {
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
    Ok(Stored {
        value: ToolEntry {
            def: ToolDef {
                spec: decode_json(row, "spec", Entity::Tool, &name)?,
                source: ToolSource::parse(&row.try_get::<String, _>("source")?)?,
                definition,
                availability: decode_json(row, "availability", Entity::Tool, &name)?,
            },
            current_version: row.try_get("current_version")?,
            latest_version: row.try_get("latest_version")?,
            enabled: get_flag(row, "enabled")?,
            missing: get_flag(row, "missing")?,
            spec_hash: row.try_get("current_hash")?,
        },
        revision: row.try_get("revision")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        changed_by: row.try_get("changed_by")?,
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

/// Checks what the store itself can check of a tool's version: tags, that the parameters are
/// an object schema and valid JSON Schema, and that a non-compiled tool has a definition object.
/// The availability rules are checked where they are written.
pub(crate) fn validate_def(def: &ToolDef) -> Result<()> {
    def.spec
        .validate()
        .map_err(|e| StoreError::invalid("spec", e.to_string()))?;
    if let Err(e) = jsonschema::meta::validate(&def.spec.parameters) {
        return Err(StoreError::invalid(
            "parameters",
            format!("not a valid JSON Schema: {e}"),
        ));
    }
    match (&def.source, &def.definition) {
        (ToolSource::Compiled, _) | (_, Some(Value::Object(_))) => Ok(()),
        (_, Some(_)) => Err(StoreError::invalid("definition", "must be a JSON object")),
        (source, None) => Err(StoreError::invalid(
            "definition",
            format!("a {} tool needs a definition", source.as_str()),
        )),
    }
}

/// Who wrote a version and why: what [`insert_version`] records beside the def.
pub(crate) struct Author<'a> {
    pub(crate) changed_by: &'a str,
    pub(crate) note: Option<&'a str>,
}

pub(crate) async fn insert_version(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    def: &ToolDef,
    version: i64,
    hash: &str,
    author: &Author<'_>,
    at: i64,
) -> Result<()> {
    let spec = &def.spec;
    let definition = def
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
    .bind(author.changed_by)
    .bind(at)
    .bind(author.note)
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
    /// Creates the tool `def` at version 1, with its availability rules; `changed_by` and
    /// `note` (why) are recorded with the version.
    ///
    /// # Errors
    /// [`StoreError::AlreadyExists`] when the name is taken, [`StoreError::Invalid`] for a bad
    /// spec, schema or rule; nothing is written then.
    pub async fn create(
        &self,
        def: &ToolDef,
        changed_by: &str,
        note: Option<&str>,
    ) -> Result<Stored<ToolEntry>> {
        validate_def(def)?;
        def.availability.validate()?;
        let name = def.name();
        let hash = def.hash();
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
        .bind(def.source.as_str())
        .bind(hash.as_str())
        .bind(at)
        .bind(changed_by)
        .bind(to_json(&def.availability, "availability")?)
        .execute(&mut **tx)
        .await?;
        let author = Author { changed_by, note };
        insert_version(&mut tx, def, 1, &hash, &author, at).await?;
        self.commit_change(tx, name).await
    }

    /// Writes `def` as a new version of an existing tool and makes it current.
    ///
    /// Only the version is written: `def.availability` is ignored and the stored rules stay
    /// (they belong to the tool, not to a version; [`Tools::update_with_rules`] and
    /// [`Tools::set_availability`] replace them). A def equal to the current version (same
    /// hash) writes nothing and returns the stored tool.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] when the tool's revision is not `expected_revision`,
    /// [`StoreError::NotFound`], [`StoreError::Invalid`].
    pub async fn update(
        &self,
        def: &ToolDef,
        expected_revision: Revision,
        changed_by: &str,
        note: Option<&str>,
    ) -> Result<Stored<ToolEntry>> {
        self.update_with_rules(def, None, expected_revision, changed_by, note)
            .await
    }

    /// [`Tools::update`], and when `rules` is given and differs from the stored rules, replaces
    /// them in the same transaction: one write, the revision moves by one, and a conflict
    /// leaves both the version and the rules as they were. A def equal to the current version
    /// with new rules writes only the rules; with the same rules too it writes nothing.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] for a bad rule or def (checked before anything is written),
    /// [`StoreError::Conflict`] when the tool's revision is not `expected_revision`,
    /// [`StoreError::NotFound`].
    pub async fn update_with_rules(
        &self,
        def: &ToolDef,
        rules: Option<&Availability>,
        expected_revision: Revision,
        changed_by: &str,
        note: Option<&str>,
    ) -> Result<Stored<ToolEntry>> {
        validate_def(def)?;
        if let Some(rules) = rules {
            rules.validate()?;
        }
        let name = def.name();
        let hash = def.hash();
        let at = now_ms();
        let mut tx = self.store.begin().await?;
        // One read under the row lock (SQLite's BEGIN IMMEDIATE holds the database), the
        // revision checked here rather than by a separate UPDATE: four statements per
        // update instead of eight, and no read-back after the commit.
        let read = match self.store.engine() {
            Engine::Sqlite => {
                "SELECT latest_version, current_hash, source, availability, revision FROM tools WHERE name = $1"
            }
            Engine::Postgres => {
                "SELECT latest_version, current_hash, source, availability, revision FROM tools WHERE name = $1 FOR UPDATE"
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
        if source != def.source.as_str() {
            return Err(source_mismatch(name, &source, def.source));
        }
        let stored_rules: Availability = decode_json(&row, "availability", Entity::Tool, name)?;
        let new_rules = rules.filter(|rules| **rules != stored_rules);
        let current_hash: String = row.try_get("current_hash")?;
        if current_hash == hash {
            let Some(rules) = new_rules else {
                tx.rollback().await?;
                return self.get(name).await;
            };
            sqlx::query(
                "UPDATE tools SET availability = $1, updated_at = $2, changed_by = $3, revision = revision + 1 WHERE name = $4",
            )
            .bind(to_json(rules, "availability")?)
            .bind(at)
            .bind(changed_by)
            .bind(name)
            .execute(&mut **tx)
            .await?;
            return self.commit_change(tx, name).await;
        }
        let version = row.try_get::<i64, _>("latest_version")? + 1;
        let author = Author { changed_by, note };
        insert_version(&mut tx, def, version, &hash, &author, at).await?;
        let availability = to_json(new_rules.unwrap_or(&stored_rules), "availability")?;
        let row = sqlx::query(
            "UPDATE tools SET current_version = $1, latest_version = $1, current_hash = $2, missing = 0, updated_at = $3, changed_by = $4, availability = $5, revision = revision + 1 WHERE name = $6 RETURNING enabled, availability, revision, created_at",
        )
        .bind(version)
        .bind(hash.as_str())
        .bind(at)
        .bind(changed_by)
        .bind(availability)
        .bind(name)
        .fetch_one(&mut **tx)
        .await?;
        let stored = Stored {
            value: ToolEntry {
                def: ToolDef {
                    spec: def.spec.clone(),
                    source: def.source,
                    definition: def.definition.clone(),
                    availability: decode_json(&row, "availability", Entity::Tool, name)?,
                },
                current_version: version,
                latest_version: version,
                enabled: get_flag(&row, "enabled")?,
                missing: false,
                spec_hash: hash,
            },
            revision: row.try_get("revision")?,
            created_at: row.try_get("created_at")?,
            updated_at: at,
            changed_by: changed_by.to_owned(),
        };
        record_change(&mut tx, "tool", name, "upsert").await?;
        tx.commit().await?;
        Ok(stored)
    }

    /// The tool `name` with its current version.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub async fn get(&self, name: &str) -> Result<Stored<ToolEntry>> {
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
    pub async fn list(&self) -> Result<Vec<Stored<ToolEntry>>> {
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
    pub(crate) async fn named(&self, names: &[String]) -> Result<Vec<Stored<ToolEntry>>> {
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
    ) -> Result<Stored<ToolEntry>> {
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
    async fn commit_change(&self, mut tx: WriteTx, name: &str) -> Result<Stored<ToolEntry>> {
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
    ) -> Result<Stored<ToolEntry>> {
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
    ) -> Result<Stored<ToolEntry>> {
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

/// The error for a def whose source differs from the stored tool's.
fn source_mismatch(name: &str, stored: &str, written: ToolSource) -> StoreError {
    StoreError::invalid(
        "source",
        format!(
            "tool `{name}` is a {stored} tool; a {} definition cannot replace it",
            written.as_str()
        ),
    )
}
