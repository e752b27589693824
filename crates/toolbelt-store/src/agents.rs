//! Agents as data: an [`AgentSpec`] in, a [`Stored<AgentSpec>`] out, with explicit tool
//! [`Binding`]s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::any::AnyRow;
use toolbelt_core::{Selection, ToolName};

use crate::error::{Entity, Result, StoreError};
use crate::revision::{Revision, Table, check_revision};
use crate::store::{Store, decode_json, now_ms, record_change, to_json};
use crate::stored::Stored;

/// Run options of a stored agent; unset fields take the agent runtime's defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct AgentSettings {
    /// Most model turns per run.
    pub max_iterations: Option<u32>,
    /// `auto`, `required`, `none`, or `tool:NAME`.
    pub tool_choice: Option<String>,
    /// Whether calls of one turn may run concurrently.
    pub parallel_tool_calls: Option<bool>,
    /// Longest a whole run may take, in ms.
    pub run_timeout_ms: Option<u64>,
    /// Default longest a tool call may take, in ms.
    pub tool_timeout_ms: Option<u64>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Most tokens per answer.
    pub max_tokens: Option<u32>,
    /// Which calls need a person's approval (`default`, `tools`, `tags`: `allow` / `ask` /
    /// `deny`); unset defers to each tool's own policy.
    pub approval: Option<toolbelt_core::ApprovalPolicy>,
    /// The provider's API root (e.g. `http://localhost:8080/v1`); unset takes
    /// `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`.
    pub base_url: Option<String>,
    /// The name of the environment variable that holds the API key (the key is never stored);
    /// unset takes `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`.
    pub api_key_env: Option<String>,
}

/// How a stored agent narrows its tools per request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct RouterSettings {
    /// `none` (send every selected tool), `keyword`, `lexical`, `embedding` or `hybrid`.
    pub strategy: Option<String>,
    /// Most tools sent per request.
    pub max_tools: Option<usize>,
    /// Tools always sent, whatever the router says.
    pub always: Vec<String>,
    /// The LLM tier, off when absent: the agent's own model reads the top N (2 to 50) tools of
    /// the hybrid ranking and its picks are sent first (one model call per request; strategy
    /// `hybrid` or `embedding` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_rerank: Option<usize>,
}

/// The most tools [`RouterSettings::llm_rerank`] can show a model.
pub(crate) const MAX_LLM_RERANK: usize = 50;

const ROUTER_STRATEGIES: &[&str] = &["none", "keyword", "lexical", "embedding", "hybrid"];

/// A tool bound to an agent explicitly, optionally at a pinned version.
///
/// In YAML/JSON: `"name"`, `"name@3"`, or `{tool: name, version: 3}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "BindingRepr")]
#[non_exhaustive]
pub struct Binding {
    /// The tool's name.
    pub tool: String,
    /// A pinned version; `None` follows the current version.
    #[serde(rename = "version", skip_serializing_if = "Option::is_none")]
    pub pinned_version: Option<i64>,
}

impl Binding {
    /// A binding of `tool` following its current version.
    pub fn new(tool: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            pinned_version: None,
        }
    }

    /// Pins `version`.
    pub fn pinned(mut self, version: i64) -> Self {
        self.pinned_version = Some(version);
        self
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum BindingRepr {
    Text(String),
    Full {
        tool: String,
        #[serde(default)]
        version: Option<i64>,
    },
}

impl TryFrom<BindingRepr> for Binding {
    type Error = String;
    fn try_from(repr: BindingRepr) -> std::result::Result<Self, String> {
        match repr {
            BindingRepr::Full { tool, version } => Ok(Self {
                tool,
                pinned_version: version,
            }),
            BindingRepr::Text(text) => {
                let (tool, version) = split_pin(&text)?;
                Ok(Self {
                    tool,
                    pinned_version: version,
                })
            }
        }
    }
}

/// Splits `name@3` into (`name`, `Some(3)`); a name without `@<digits>` has no pin.
pub fn split_pin(text: &str) -> std::result::Result<(String, Option<i64>), String> {
    if let Some((name, version)) = text.rsplit_once('@')
        && !version.is_empty()
        && version.chars().all(|c| c.is_ascii_digit())
    {
        let version: i64 = version
            .parse()
            .map_err(|_| format!("version in `{text}` is too large"))?;
        if version < 1 {
            return Err(format!("version in `{text}` must be 1 or more"));
        }
        return Ok((name.to_owned(), Some(version)));
    }
    Ok((text.to_owned(), None))
}

/// What an agent is: its kind, labels, prompt, model, options, router settings, tool
/// selection with pins, and explicit bindings. The store keeps it as [`Stored<AgentSpec>`];
/// it is also the shape of `toolbelt agents create -f` and of the API's agent body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct AgentSpec {
    /// Unique name.
    pub name: String,
    /// Kind, e.g. `assistant`, `coder`, `researcher`; tools may be restricted to kinds.
    pub kind: String,
    /// Labels; tools may require some.
    pub labels: Vec<String>,
    /// Capabilities the agent declares; tools may require some.
    pub capabilities: Vec<String>,
    /// What the agent is for (shown when it is used as a tool).
    pub description: String,
    /// System prompt.
    pub system_prompt: Option<String>,
    /// Provider name (`openai`, `anthropic`, or a configured endpoint).
    pub provider: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// Run options.
    pub options: AgentSettings,
    /// Router settings.
    pub router: RouterSettings,
    /// Selection expression over groups and tools; items may pin a version (`file_read@3`).
    pub selection: String,
    /// Versions pinned for tools the selection picks, by tool name.
    pub pins: BTreeMap<String, i64>,
    /// Tools bound explicitly.
    pub tools: Vec<Binding>,
}

impl Default for AgentSpec {
    fn default() -> Self {
        Self {
            name: String::new(),
            kind: "assistant".to_owned(),
            labels: Vec::new(),
            capabilities: Vec::new(),
            description: String::new(),
            system_prompt: None,
            provider: None,
            model: None,
            options: AgentSettings::default(),
            router: RouterSettings::default(),
            selection: String::new(),
            pins: BTreeMap::new(),
            tools: Vec::new(),
        }
    }
}

impl AgentSpec {
    /// An agent named `name` of kind `assistant` with no tools.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets the selection expression.
    pub fn with_selection(mut self, selection: impl Into<String>) -> Self {
        self.selection = selection.into();
        self
    }

    /// Adds an explicit binding.
    pub fn with_tool(mut self, binding: Binding) -> Self {
        self.tools.push(binding);
        self
    }
}

impl AgentSpec {
    /// The spec as the store would keep it: checked and normalised like [`Agents::create`]
    /// (pins moved out of the selection), without checking that bound tools exist. An agent
    /// defined outside the database (a server's configuration file) goes through this, so
    /// configured and stored agents are built the same way.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] naming the field, as [`Agents::create`].
    pub fn normalized(&self) -> Result<Self> {
        let checked = check_spec(self)?;
        Ok(Self {
            selection: checked.selection,
            pins: checked.pins,
            ..self.clone()
        })
    }

    /// [`AgentSpec::normalized`] as a record that was never stored (revision 0).
    ///
    /// # Errors
    /// As [`AgentSpec::normalized`].
    pub fn unstored(&self) -> Result<Stored<AgentSpec>> {
        Ok(Stored::unstored(self.normalized()?, "unknown"))
    }
}

/// A normalised, validated draft: pins moved out of the selection.
struct Checked {
    selection: String,
    pins: BTreeMap<String, i64>,
}

fn check_spec(spec: &AgentSpec) -> Result<Checked> {
    ToolName::new(&spec.name).map_err(|e| StoreError::invalid("name", e.to_string()))?;
    if spec.kind.trim().is_empty() {
        return Err(StoreError::invalid("kind", "must not be empty"));
    }
    let mut pins = spec.pins.clone();
    let mut items = Vec::new();
    for (i, raw) in spec.selection.split(',').enumerate() {
        let item = raw.trim();
        if item.is_empty() {
            items.push(item.to_owned());
            continue;
        }
        let (body, pin) = split_pin(item)
            .map_err(|reason| StoreError::invalid(format!("selection[{i}]"), reason))?;
        if let Some(version) = pin {
            let tool = body.trim_start_matches("tool:").trim_start_matches('+');
            pins.insert(tool.to_owned(), version);
        }
        items.push(body);
    }
    let selection = if spec.selection.trim().is_empty() {
        String::new()
    } else {
        items.join(",")
    };
    Selection::parse(&selection).map_err(|e| StoreError::invalid("selection", e.to_string()))?;
    for (tool, version) in &pins {
        if *version < 1 {
            return Err(StoreError::invalid(
                format!("pins.{tool}"),
                "a version is 1 or more",
            ));
        }
    }
    if let Some(choice) = &spec.options.tool_choice
        && !matches!(choice.as_str(), "auto" | "required" | "none")
        && !choice.starts_with("tool:")
    {
        return Err(StoreError::invalid(
            "options.tool_choice",
            format!("`{choice}` is not one of auto, required, none, tool:NAME"),
        ));
    }
    if spec.options.max_iterations == Some(0) {
        return Err(StoreError::invalid(
            "options.max_iterations",
            "must be 1 or more",
        ));
    }
    if let Some(strategy) = &spec.router.strategy
        && !ROUTER_STRATEGIES.contains(&strategy.as_str())
    {
        return Err(StoreError::invalid(
            "router.strategy",
            format!(
                "`{strategy}` is not one of {}",
                ROUTER_STRATEGIES.join(", ")
            ),
        ));
    }
    if let Some(n) = spec.router.llm_rerank {
        if !(2..=MAX_LLM_RERANK).contains(&n) {
            return Err(StoreError::invalid(
                "router.llm_rerank",
                format!("{n} tools: give 2 to {MAX_LLM_RERANK}"),
            ));
        }
        if let Some(strategy) = spec.router.strategy.as_deref()
            && !matches!(strategy, "hybrid" | "embedding")
        {
            return Err(StoreError::invalid(
                "router.llm_rerank",
                format!(
                    "reranks the hybrid ranking; strategy `{strategy}` has none (use hybrid or embedding)"
                ),
            ));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, binding) in spec.tools.iter().enumerate() {
        if !seen.insert(binding.tool.as_str()) {
            return Err(StoreError::invalid(
                format!("tools[{i}]"),
                format!("`{}` is bound twice", binding.tool),
            ));
        }
    }
    Ok(Checked { selection, pins })
}

/// Checks inside `tx` that `tool` exists and, when pinned, that the version exists.
async fn check_tool_ref(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    field: &str,
    tool: &str,
    version: Option<i64>,
) -> Result<()> {
    let latest: Option<i64> =
        sqlx::query_scalar("SELECT latest_version FROM tools WHERE name = $1")
            .bind(tool)
            .fetch_optional(&mut **tx)
            .await?;
    let Some(latest) = latest else {
        return Err(StoreError::invalid(
            field,
            format!("no tool named `{tool}` (`toolbelt tools list` shows the stored tools)"),
        ));
    };
    if let Some(version) = version {
        let found: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM tool_versions WHERE tool_name = $1 AND version = $2",
        )
        .bind(tool)
        .bind(version)
        .fetch_one(&mut **tx)
        .await?;
        if found == 0 {
            return Err(StoreError::invalid(
                field,
                format!("tool `{tool}` has no version {version} (latest is {latest})"),
            ));
        }
    }
    Ok(())
}

const SELECT_AGENT: &str = "SELECT name, kind, labels, capabilities, description, system_prompt, provider, model, options, router, selection, pins, revision, created_at, updated_at, changed_by FROM agents";

/// Agents and their tool bindings: the operations of that aggregate, from [`Store::agents`].
#[derive(Debug, Clone, Copy)]
pub struct Agents<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// Agents and their tool bindings.
    pub fn agents(&self) -> Agents<'_> {
        Agents { store: self }
    }
}

impl Agents<'_> {
    /// Creates an agent with its bindings, in one transaction.
    ///
    /// # Errors
    /// [`StoreError::AlreadyExists`]; [`StoreError::Invalid`] naming the field (a bad selection, a
    /// binding to a missing tool, a pinned version that does not exist); nothing is written then.
    pub async fn create(&self, spec: &AgentSpec, changed_by: &str) -> Result<Stored<AgentSpec>> {
        let checked = check_spec(spec)?;
        let mut tx = self.store.begin().await?;
        let exists: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM agents WHERE name = $1")
            .bind(spec.name.as_str())
            .fetch_one(&mut **tx)
            .await?;
        if exists > 0 {
            return Err(StoreError::AlreadyExists {
                entity: Entity::Agent,
                name: spec.name.clone(),
            });
        }
        let at = now_ms();
        sqlx::query(
            "INSERT INTO agents (name, kind, labels, capabilities, description, system_prompt, provider, model, options, router, selection, pins, revision, created_at, updated_at, changed_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 1, $13, $13, $14)",
        )
        .bind(spec.name.as_str())
        .bind(spec.kind.as_str())
        .bind(to_json(&spec.labels, "labels")?)
        .bind(to_json(&spec.capabilities, "capabilities")?)
        .bind(spec.description.as_str())
        .bind(spec.system_prompt.as_deref())
        .bind(spec.provider.as_deref())
        .bind(spec.model.as_deref())
        .bind(to_json(&spec.options, "options")?)
        .bind(to_json(&spec.router, "router")?)
        .bind(checked.selection.as_str())
        .bind(to_json(&checked.pins, "pins")?)
        .bind(at)
        .bind(changed_by)
        .execute(&mut **tx)
        .await?;
        write_refs(&mut tx, spec, &checked, at).await?;
        record_change(&mut tx, "agent", &spec.name, "upsert").await?;
        tx.commit().await?;
        self.get(&spec.name).await
    }

    /// Replaces an agent's definition and bindings, in one transaction.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] when the revision is not `expected_revision`; as
    /// [`Agents::create`] otherwise.
    pub async fn update(
        &self,
        spec: &AgentSpec,
        expected_revision: Revision,
        changed_by: &str,
    ) -> Result<Stored<AgentSpec>> {
        let checked = check_spec(spec)?;
        let mut tx = self.store.begin().await?;
        check_revision(&mut tx, Table::Agents, &spec.name, expected_revision).await?;
        let at = now_ms();
        sqlx::query(
            "UPDATE agents SET kind = $1, labels = $2, capabilities = $3, description = $4, system_prompt = $5, provider = $6, model = $7, options = $8, router = $9, selection = $10, pins = $11, updated_at = $12, changed_by = $13 WHERE name = $14",
        )
        .bind(spec.kind.as_str())
        .bind(to_json(&spec.labels, "labels")?)
        .bind(to_json(&spec.capabilities, "capabilities")?)
        .bind(spec.description.as_str())
        .bind(spec.system_prompt.as_deref())
        .bind(spec.provider.as_deref())
        .bind(spec.model.as_deref())
        .bind(to_json(&spec.options, "options")?)
        .bind(to_json(&spec.router, "router")?)
        .bind(checked.selection.as_str())
        .bind(to_json(&checked.pins, "pins")?)
        .bind(at)
        .bind(changed_by)
        .bind(spec.name.as_str())
        .execute(&mut **tx)
        .await?;
        sqlx::query("DELETE FROM agent_tools WHERE agent_name = $1")
            .bind(spec.name.as_str())
            .execute(&mut **tx)
            .await?;
        write_refs(&mut tx, spec, &checked, at).await?;
        record_change(&mut tx, "agent", &spec.name, "upsert").await?;
        tx.commit().await?;
        self.get(&spec.name).await
    }

    /// The agent `name` with its bindings.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub async fn get(&self, name: &str) -> Result<Stored<AgentSpec>> {
        let sql = "SELECT name, kind, labels, capabilities, description, system_prompt, provider, model, options, router, selection, pins, revision, created_at, updated_at, changed_by FROM agents WHERE name = $1";
        let row = sqlx::query(sql)
            .bind(name)
            .fetch_optional(self.store.pool())
            .await?
            .ok_or_else(|| StoreError::not_found(Entity::Agent, name))?;
        let mut agent = agent_from_row(&row)?;
        agent.tools = self.bindings(name).await?;
        Ok(agent)
    }

    /// Every agent, by name, with bindings.
    ///
    /// # Errors
    /// The database's error.
    pub async fn list(&self) -> Result<Vec<Stored<AgentSpec>>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("{SELECT_AGENT} ORDER BY name")))
            .fetch_all(self.store.pool())
            .await?;
        let mut agents = rows
            .iter()
            .map(agent_from_row)
            .collect::<Result<Vec<_>>>()?;
        let bindings = sqlx::query(
            "SELECT agent_name, tool_name, pinned_version FROM agent_tools ORDER BY agent_name, tool_name",
        )
        .fetch_all(self.store.pool())
        .await?;
        for row in bindings {
            let agent_name: String = row.try_get("agent_name")?;
            if let Some(agent) = agents.iter_mut().find(|a| a.name == agent_name) {
                agent.tools.push(Binding {
                    tool: row.try_get("tool_name")?,
                    pinned_version: row.try_get("pinned_version")?,
                });
            }
        }
        Ok(agents)
    }

    /// Deletes an agent and its bindings.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Conflict`].
    pub async fn delete(&self, name: &str, expected_revision: Revision) -> Result<()> {
        let mut tx = self.store.begin().await?;
        check_revision(&mut tx, Table::Agents, name, expected_revision).await?;
        sqlx::query("DELETE FROM agent_tools WHERE agent_name = $1")
            .bind(name)
            .execute(&mut **tx)
            .await?;
        sqlx::query("DELETE FROM agents WHERE name = $1")
            .bind(name)
            .execute(&mut **tx)
            .await?;
        record_change(&mut tx, "agent", name, "delete").await?;
        tx.commit().await?;
        Ok(())
    }

    /// Binds `tool` to `agent` (`add_tool`), replacing an existing binding's pin.
    /// Durable when it returns.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for the agent, [`StoreError::Invalid`] for a missing tool or
    /// version, [`StoreError::Conflict`].
    pub async fn bind(
        &self,
        agent: &str,
        binding: &Binding,
        expected_revision: Revision,
        changed_by: &str,
    ) -> Result<Stored<AgentSpec>> {
        let mut tx = self.store.begin().await?;
        check_revision(&mut tx, Table::Agents, agent, expected_revision).await?;
        check_tool_ref(&mut tx, "tool", &binding.tool, binding.pinned_version).await?;
        sqlx::query("DELETE FROM agent_tools WHERE agent_name = $1 AND tool_name = $2")
            .bind(agent)
            .bind(binding.tool.as_str())
            .execute(&mut **tx)
            .await?;
        let at = now_ms();
        sqlx::query(
            "INSERT INTO agent_tools (agent_name, tool_name, pinned_version, bound_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(agent)
        .bind(binding.tool.as_str())
        .bind(binding.pinned_version)
        .bind(at)
        .execute(&mut **tx)
        .await?;
        touch_agent(&mut tx, agent, at, changed_by).await?;
        tx.commit().await?;
        self.get(agent).await
    }

    /// Removes the binding of `tool` from `agent` (`remove_tool`). Durable when it returns.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for the agent or when the tool is not bound, [`StoreError::Conflict`].
    pub async fn unbind(
        &self,
        agent: &str,
        tool: &str,
        expected_revision: Revision,
        changed_by: &str,
    ) -> Result<Stored<AgentSpec>> {
        let mut tx = self.store.begin().await?;
        check_revision(&mut tx, Table::Agents, agent, expected_revision).await?;
        let done = sqlx::query("DELETE FROM agent_tools WHERE agent_name = $1 AND tool_name = $2")
            .bind(agent)
            .bind(tool)
            .execute(&mut **tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::not_found(
                Entity::Binding,
                format!("{agent} -> {tool}"),
            ));
        }
        touch_agent(&mut tx, agent, now_ms(), changed_by).await?;
        tx.commit().await?;
        self.get(agent).await
    }

    async fn bindings(&self, agent: &str) -> Result<Vec<Binding>> {
        let rows = sqlx::query(
            "SELECT tool_name, pinned_version FROM agent_tools WHERE agent_name = $1 ORDER BY tool_name",
        )
        .bind(agent)
        .fetch_all(self.store.pool())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(Binding {
                    tool: row.try_get("tool_name")?,
                    pinned_version: row.try_get("pinned_version")?,
                })
            })
            .collect()
    }
}

async fn touch_agent(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    agent: &str,
    at: i64,
    changed_by: &str,
) -> Result<()> {
    sqlx::query("UPDATE agents SET updated_at = $1, changed_by = $2 WHERE name = $3")
        .bind(at)
        .bind(changed_by)
        .bind(agent)
        .execute(&mut **tx)
        .await?;
    record_change(tx, "agent", agent, "upsert").await
}

async fn write_refs(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    spec: &AgentSpec,
    checked: &Checked,
    at: i64,
) -> Result<()> {
    for (tool, version) in &checked.pins {
        check_tool_ref(tx, &format!("pins.{tool}"), tool, Some(*version)).await?;
    }
    for (i, binding) in spec.tools.iter().enumerate() {
        check_tool_ref(
            tx,
            &format!("tools[{i}]"),
            &binding.tool,
            binding.pinned_version,
        )
        .await?;
        sqlx::query(
            "INSERT INTO agent_tools (agent_name, tool_name, pinned_version, bound_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(spec.name.as_str())
        .bind(binding.tool.as_str())
        .bind(binding.pinned_version)
        .bind(at)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

fn agent_from_row(row: &AnyRow) -> Result<Stored<AgentSpec>> {
    let name: String = row.try_get("name")?;
    Ok(Stored {
        value: AgentSpec {
            kind: row.try_get("kind")?,
            labels: decode_json(row, "labels", Entity::Agent, &name)?,
            capabilities: decode_json(row, "capabilities", Entity::Agent, &name)?,
            description: row.try_get("description")?,
            system_prompt: row.try_get("system_prompt")?,
            provider: row.try_get("provider")?,
            model: row.try_get("model")?,
            options: decode_json(row, "options", Entity::Agent, &name)?,
            router: decode_json(row, "router", Entity::Agent, &name)?,
            selection: row.try_get("selection")?,
            pins: decode_json(row, "pins", Entity::Agent, &name)?,
            tools: Vec::new(),
            name,
        },
        revision: row.try_get("revision")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        changed_by: row.try_get("changed_by")?,
    })
}
