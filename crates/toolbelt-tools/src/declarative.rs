//! Declarative tools: HTTP and command tools defined as data (stored in the database, written in
//! YAML/JSON), validated on creation with errors that name the field, built into ordinary
//! [`Tool`](toolbelt_core::Tool)s.
//!
//! A definition is `{"http": {...}}` or `{"command": {...}}`; templates use `{{arg}}` for an
//! argument and `{{secret.NAME}}` for a secret the operator declared ([`Secrets`]: a
//! `TOOLBELT_SECRET_NAME` variable, the secrets file, or an allow-listed variable) resolved at
//! call time, never stored, and scrubbed from outputs and errors in every encoding an upstream
//! may echo it in (ADR 0051).
//!
//! Command tools and HTTP tools whose method is not `GET`/`HEAD` are mutating (they need
//! approval) unless the definition says `read_only: true`.

mod command;
mod http;
mod scrub;
mod secrets;
mod template;

pub use command::{CommandDef, CommandTool};
pub use http::{HttpDef, HttpTool};
pub use secrets::{ENV_NAMES_VAR, ENV_PREFIX, FILE_VAR, SecretError, Secrets, secret_names};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbelt_core::{Effect, ToolHandle, ToolSpec};

/// A declarative tool definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Definition {
    /// An HTTP request template.
    Http(HttpDef),
    /// An argument-vector template run without a shell.
    Command(CommandDef),
}

/// A definition that cannot be used, naming the field (`http.url`, `command.argv[2]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {field}: {reason}")]
pub struct DefinitionError {
    /// The field at fault.
    pub field: String,
    /// What is wrong and what is allowed.
    pub reason: String,
}

impl DefinitionError {
    pub(crate) fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl Definition {
    /// Parses a stored definition, naming unknown or missing fields.
    ///
    /// # Errors
    /// [`DefinitionError`] with field `definition` and serde's message.
    pub fn from_value(value: &Value) -> Result<Self, DefinitionError> {
        serde_json::from_value(value.clone())
            .map_err(|e| DefinitionError::new("definition", e.to_string()))
    }

    /// Checks the definition against the tool's spec (placeholders name declared arguments,
    /// the method and URL are usable, the JSONPath parses).
    ///
    /// # Errors
    /// [`DefinitionError`] naming the field.
    pub fn validate(&self, spec: &ToolSpec) -> Result<(), DefinitionError> {
        match self {
            Self::Http(def) => def.validate(spec),
            Self::Command(def) => def.validate(spec),
        }
    }

    /// `spec` with the policy the built tool will have: mutating, not parallel and needing
    /// approval unless the definition declares itself free of side effects (`read_only`, or an
    /// HTTP `GET`/`HEAD`). A host stores this spec, so what it lists is what runs.
    #[must_use]
    pub fn effective_spec(&self, spec: ToolSpec) -> ToolSpec {
        match self {
            Self::Http(def) => mutating_unless(spec, !def.mutating_by_default() || def.read_only),
            Self::Command(def) => mutating_unless(spec, def.read_only),
        }
    }

    /// Validates and builds the tool.
    ///
    /// # Errors
    /// [`DefinitionError`] naming the field.
    pub fn build(&self, spec: ToolSpec, secrets: Secrets) -> Result<ToolHandle, DefinitionError> {
        self.validate(&spec)?;
        let handle = match self {
            Self::Http(def) => ToolHandle::new(HttpTool::new(spec, def.clone(), secrets)),
            Self::Command(def) => ToolHandle::new(CommandTool::new(spec, def.clone(), secrets)),
        };
        handle.map_err(|e| DefinitionError::new("spec", e.to_string()))
    }
}

/// The argument names a spec declares (`parameters.properties`).
pub(crate) fn declared_args(spec: &ToolSpec) -> Vec<String> {
    spec.parameters
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// `spec` with a mutating policy (needing approval, not parallel) when it says read-only and the
/// definition does not declare itself free of side effects; a mutating spec stays as it is.
pub(crate) fn mutating_unless(mut spec: ToolSpec, read_only: bool) -> ToolSpec {
    if !read_only && spec.policy.is_read_only() {
        spec.policy.effect = Effect::Mutating;
        spec.policy.parallel = false;
        spec.policy.needs_approval = true;
    }
    spec
}
