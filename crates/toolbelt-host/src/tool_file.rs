//! The tool file (`toolbelt tools add -f`, and the API's second body shape): one tool's
//! name, description, parameters and `http`/`command`/`agent` definition at the top level.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolbelt_core::{ToolPolicy, ToolSpec};
use toolbelt_store::{
    Availability, Revision, Store, StoreError, Stored, ToolDef, ToolEntry, ToolSource,
};
use toolbelt_tools::declarative::{CommandDef, Definition, HttpDef};

use crate::agent_tool_parameters;

/// A tool definition file (YAML or JSON): what `toolbelt tools add -f` reads.
///
/// ```yaml
/// name: weather
/// description: Current weather for a city
/// tags: [web]
/// parameters:
///   type: object
///   properties: {city: {type: string}}
///   required: [city]
/// http:
///   url: "https://wttr.in/{{city}}?format=j1"
///   extract: "$.current_condition[0].temp_C"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolFile {
    /// The tool's name (ADR 0007 rules).
    pub name: String,
    /// What the tool does, for a model choosing among tools.
    pub description: String,
    /// Groups.
    #[serde(default)]
    pub tags: Vec<String>,
    /// JSON Schema of the arguments (default: an object with no properties).
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    /// `read_only` or `mutating` (default: read-only for HTTP GET/HEAD, mutating otherwise).
    #[serde(default)]
    pub effect: Option<String>,
    /// Whether calls need approval (default: the effect's default).
    #[serde(default)]
    pub needs_approval: Option<bool>,
    /// Longest a call may run, in ms.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// An HTTP tool.
    #[serde(default)]
    pub http: Option<HttpDef>,
    /// A command tool.
    #[serde(default)]
    pub command: Option<CommandDef>,
    /// An agent tool: `{agent: NAME}` runs the stored agent NAME.
    #[serde(default)]
    pub agent: Option<AgentToolDef>,
    /// Who may use the tool, and when; absent leaves the stored rules on an update (see
    /// [`update_tool`]) and means anyone on a create.
    #[serde(default)]
    pub availability: Option<Availability>,
    /// Why this version, shown by `toolbelt tools versions`.
    #[serde(default)]
    pub note: Option<String>,
}

/// An agent-as-tool definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AgentToolDef {
    /// The stored agent to run.
    pub agent: String,
}

fn empty_object_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> StoreError {
    StoreError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

impl ToolFile {
    /// Reads a YAML or JSON file (YAML is a superset of JSON).
    ///
    /// # Errors
    /// [`StoreError::Invalid`] naming the file, the line and the field.
    pub fn read(path: &Path) -> Result<Self, StoreError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| invalid(path.display().to_string(), e.to_string()))?;
        Self::parse(&text).map_err(|e| match e {
            StoreError::Invalid { field, reason } if field == "file" => {
                invalid(path.display().to_string(), reason)
            }
            other => other,
        })
    }

    /// Parses YAML or JSON text.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] with field `file` and the parser's message (line, column, field).
    pub fn parse(text: &str) -> Result<Self, StoreError> {
        from_yaml(text).map_err(|reason| invalid("file", reason))
    }

    /// Checks the file and turns it into the tool it defines, with its `availability` (anyone
    /// when absent). The `note` is not part of the tool: pass it to the store with the write.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] naming the field: not exactly one of `http`/`command`/`agent`, a
    /// bad effect, or what [`Definition::validate`] finds.
    pub fn to_def(&self) -> Result<ToolDef, StoreError> {
        let kinds = [
            self.http.is_some(),
            self.command.is_some(),
            self.agent.is_some(),
        ];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return Err(invalid(
                "http/command/agent",
                "a tool file needs exactly one of `http`, `command` or `agent`",
            ));
        }
        let read_only_default = self
            .http
            .as_ref()
            .is_some_and(|h| matches!(h.method.to_uppercase().as_str(), "GET" | "HEAD"))
            || self.agent.is_some();
        let mut policy = match self.effect.as_deref() {
            None if read_only_default => ToolPolicy::read_only(),
            None | Some("mutating") => ToolPolicy::mutating(),
            Some("read_only") => ToolPolicy::read_only(),
            Some(other) => {
                return Err(invalid(
                    "effect",
                    format!("`{other}` is not one of read_only, mutating"),
                ));
            }
        };
        if let Some(needs) = self.needs_approval {
            policy.needs_approval = needs;
        }
        let parameters = if self.agent.is_some() {
            agent_tool_parameters()
        } else {
            self.parameters.clone()
        };
        let mut builder = ToolSpec::builder(&self.name)
            .description(&self.description)
            .parameters(parameters)
            .tags(self.tags.clone())
            .policy(policy);
        if let Some(ms) = self.timeout_ms {
            builder = builder.timeout(Duration::from_millis(ms));
        }
        let spec = builder
            .build()
            .map_err(|e| invalid("spec", e.to_string()))?;
        // `effect: read_only` is how a tool file declares a command or a non-GET request free
        // of side effects; the definition carries it, as the declarative tool reads it there.
        let declared_read_only = self.effect.as_deref() == Some("read_only");
        let (source, definition) = if let Some(http) = &self.http {
            let mut http = http.clone();
            http.read_only |= declared_read_only;
            let definition = Definition::Http(http.clone());
            definition
                .validate(&spec)
                .map_err(|e| invalid(e.field, e.reason))?;
            (ToolSource::Declarative, json!({ "http": http }))
        } else if let Some(command) = &self.command {
            let mut command = command.clone();
            command.read_only |= declared_read_only;
            let definition = Definition::Command(command.clone());
            definition
                .validate(&spec)
                .map_err(|e| invalid(e.field, e.reason))?;
            (ToolSource::Declarative, json!({ "command": command }))
        } else if let Some(agent) = &self.agent {
            if self.parameters != empty_object_schema() {
                return Err(invalid(
                    "parameters",
                    "an agent tool takes `input` and `context`; leave `parameters` out",
                ));
            }
            (ToolSource::Agent, json!({ "agent": agent }))
        } else {
            return Err(invalid("http/command/agent", "missing"));
        };
        Ok(ToolDef::new(spec, source)
            .with_definition(definition)
            .with_availability(self.availability.clone().unwrap_or_default()))
    }
}

/// Writes `def` as a new version of its stored tool and, when `availability` is given and
/// differs from the stored rules, replaces them in the same transaction: what an update from a
/// tool file or a tool body does, where absent rules keep the stored ones
/// ([`toolbelt_store::Tools::update_with_rules`]). One write: the revision moves by one, and a
/// conflict writes neither the version nor the rules.
///
/// # Errors
/// [`StoreError::Invalid`] for a bad rule or def (checked before anything is written),
/// [`StoreError::Conflict`] when the tool's revision is not `expected_revision`,
/// [`StoreError::NotFound`].
pub async fn update_tool(
    store: &Store,
    def: &ToolDef,
    availability: Option<&Availability>,
    expected_revision: Revision,
    changed_by: &str,
    note: Option<&str>,
) -> Result<Stored<ToolEntry>, StoreError> {
    store
        .tools()
        .update_with_rules(def, availability, expected_revision, changed_by, note)
        .await
}

/// Parses YAML or JSON text into `T` with JSON's data model, so that enums are written as maps
/// (`{secret: NAME}`) in both syntaxes rather than as YAML tags.
///
/// # Errors
/// The YAML syntax error (with line and column) or the field that does not fit `T`.
pub fn from_yaml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let value: Value = serde_norway::from_str(text).map_err(|e| e.to_string())?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// Checks that an agent tool's target agent exists (call before storing the tool).
///
/// # Errors
/// [`StoreError::Invalid`] naming `agent.agent` when no such agent is stored.
pub async fn check_agent_tool(store: &Store, def: &ToolDef) -> Result<(), StoreError> {
    if def.source != ToolSource::Agent {
        return Ok(());
    }
    let name = def
        .definition
        .as_ref()
        .and_then(|d| d.pointer("/agent/agent"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    match store.agents().get(name).await {
        Ok(_) => Ok(()),
        Err(StoreError::NotFound { .. }) => Err(invalid(
            "agent.agent",
            format!("no agent named `{name}` (`toolbelt agents ls` lists them)"),
        )),
        Err(e) => Err(e),
    }
}
