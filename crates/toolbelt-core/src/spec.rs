//! [`ToolSpec`]: everything known about a tool except its handler.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::SpecError;
use crate::name::{ToolName, validate_strict_name};

/// Where a tool comes from; decides nothing at run time but is shown to people and stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolKind {
    /// A Rust function or a hand-written [`Tool`](crate::Tool).
    #[default]
    Function,
    /// Another agent used as a tool.
    Agent,
    /// A tool imported from an MCP server.
    Mcp,
    /// A tool about tools, such as `search_tools`.
    Meta,
}

/// Whether a tool changes anything outside itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Reads only; safe to run alongside anything.
    #[default]
    ReadOnly,
    /// Writes files, runs commands, sends requests that change state.
    Mutating,
}

/// What the executor does with output longer than [`ToolPolicy::max_output_bytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Overflow {
    /// Keep the head and the tail with a marker saying how much was cut.
    #[default]
    Truncate,
    /// Write the whole output to a temporary file and return a preview and the path.
    Spill,
    /// Return an error telling the model to narrow its request.
    Fail,
}

/// The safety and scheduling record of one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ToolPolicy {
    /// Read-only or mutating.
    pub effect: Effect,
    /// Whether calls may run concurrently with other calls of the same turn.
    /// Defaults to `true` for read-only tools and `false` for mutating ones.
    pub parallel: bool,
    /// Whether a call needs approval unless an approval policy says otherwise.
    pub needs_approval: bool,
    /// Largest output passed to the model, in bytes of text.
    pub max_output_bytes: usize,
    /// What happens past `max_output_bytes`.
    pub on_overflow: Overflow,
    /// Whether results may be cached by arguments.
    pub cacheable: bool,
    /// Whether a call mostly waits on something outside the executor (a person,
    /// an inner agent). Such calls hold no concurrency permit while they run, so
    /// nested agents sharing one executor cannot exhaust its permits and deadlock.
    /// Agent tools ([`ToolKind::Agent`]) are treated so whatever this says.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub waits: bool,
    /// Whether running a mutating call twice has the same effect as once. A
    /// timed-out attempt of a mutating tool may have done its work, so it is
    /// retried only when this is set (read-only tools are always idempotent).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub idempotent: bool,
}

/// Default output cap: 64 KiB, about 16k tokens.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 * 1024;

impl Default for ToolPolicy {
    fn default() -> Self {
        Self::read_only()
    }
}

impl ToolPolicy {
    /// A read-only, parallel, unapproved, uncached policy.
    pub fn read_only() -> Self {
        Self {
            effect: Effect::ReadOnly,
            parallel: true,
            needs_approval: false,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            on_overflow: Overflow::Truncate,
            cacheable: false,
            waits: false,
            idempotent: false,
        }
    }

    /// A mutating, serial policy that needs approval.
    pub fn mutating() -> Self {
        Self {
            effect: Effect::Mutating,
            parallel: false,
            needs_approval: true,
            ..Self::read_only()
        }
    }

    /// Whether the tool is read-only.
    pub fn is_read_only(&self) -> bool {
        self.effect == Effect::ReadOnly
    }
}

/// How a failed call is retried: only errors the tool marks retryable, and timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt; `0` disables retrying.
    pub max_retries: u32,
    /// Delay before the first retry.
    #[serde(with = "millis")]
    pub initial_backoff: Duration,
    /// Upper bound of any delay.
    #[serde(with = "millis")]
    pub max_backoff: Duration,
    /// Factor applied to the delay after each retry.
    pub multiplier: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::none()
    }
}

impl RetryPolicy {
    /// No retries.
    pub const fn none() -> Self {
        Self {
            max_retries: 0,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            multiplier: 2,
        }
    }

    /// `max_retries` retries with exponential backoff from 100 ms up to 5 s.
    pub const fn retries(max_retries: u32) -> Self {
        Self {
            max_retries,
            ..Self::none()
        }
    }

    /// Sets the first delay.
    pub const fn with_initial_backoff(mut self, delay: Duration) -> Self {
        self.initial_backoff = delay;
        self
    }

    /// The delay before retry number `attempt` (1-based), capped by `max_backoff`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        crate::Backoff::new(self.initial_backoff, self.max_backoff)
            .with_multiplier(self.multiplier)
            .delay(attempt)
    }
}

/// Everything known about a tool except its handler.
///
/// Build one with [`ToolSpec::builder`]; fields stay public for reading and
/// editing, and the registry re-validates a spec when it is added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSpec {
    /// Unique name the model calls the tool by.
    pub name: ToolName,
    /// What the tool does, worded for a model choosing among tools.
    pub description: String,
    /// JSON Schema of the arguments; its root is an object schema.
    pub parameters: Value,
    /// Groups the tool belongs to.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Longest a call may run; `None` means the executor's default.
    #[serde(default, with = "opt_millis", rename = "timeout_ms")]
    pub timeout: Option<Duration>,
    /// How failures are retried.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// Version of this definition, shown to stores and people.
    #[serde(default = "default_version")]
    pub version: String,
    /// Free-form metadata (owner, docs URL, ...).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Where the tool comes from.
    #[serde(default)]
    pub kind: ToolKind,
    /// Safety and scheduling.
    #[serde(default)]
    pub policy: ToolPolicy,
}

fn default_version() -> String {
    "1.0.0".to_owned()
}

impl ToolSpec {
    /// Starts a spec named `name`; the name is checked by [`ToolSpecBuilder::build`].
    pub fn builder(name: impl Into<String>) -> ToolSpecBuilder {
        ToolSpecBuilder {
            name: name.into(),
            description: None,
            parameters: None,
            tags: Vec::new(),
            timeout: None,
            retry: RetryPolicy::none(),
            version: default_version(),
            metadata: Map::new(),
            kind: ToolKind::Function,
            policy: ToolPolicy::read_only(),
        }
    }

    /// Checks the tags and the parameter schema (the name is valid by construction).
    ///
    /// # Errors
    /// [`SpecError::InvalidName`] for a bad tag, [`SpecError::InvalidSchema`]
    /// when the parameters are not an object schema.
    pub fn validate(&self) -> Result<(), SpecError> {
        for tag in &self.tags {
            validate_tag(tag)?;
        }
        validate_parameters(self.name.as_str(), &self.parameters)
    }

    /// Whether the tool carries `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }

    /// The JSON form sent to LLM APIs: name, description and parameters.
    pub fn to_function_json(&self) -> Value {
        serde_json::json!({
            "name": self.name.as_str(),
            "description": self.description,
            "parameters": self.parameters,
        })
    }
}

/// Tags are group names: like tool names, plus `.` and `:` for namespaces (`mcp:github`).
pub(crate) fn validate_tag(tag: &str) -> Result<(), SpecError> {
    let plain: String = tag
        .chars()
        .map(|c| if c == '.' || c == ':' { '_' } else { c })
        .collect();
    validate_strict_name(&plain, "tag").map_err(|err| match err {
        SpecError::InvalidName { what, reason, .. } => SpecError::InvalidName {
            name: tag.to_owned(),
            what,
            reason,
        },
        other => other,
    })
}

fn validate_parameters(tool: &str, schema: &Value) -> Result<(), SpecError> {
    let invalid = |pointer: &str, reason: String| SpecError::InvalidSchema {
        tool: tool.to_owned(),
        pointer: pointer.to_owned(),
        reason,
    };
    let Some(obj) = schema.as_object() else {
        return Err(invalid(
            "",
            format!("must be a JSON object, found {}", json_type(schema)),
        ));
    };
    match obj.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(invalid(
                "/type",
                format!("must be \"object\", found {other}"),
            ));
        }
        None => {
            return Err(invalid(
                "/type",
                "is missing; LLM APIs need \"object\"".to_owned(),
            ));
        }
    }
    if let Some(props) = obj.get("properties")
        && !props.is_object()
    {
        return Err(invalid(
            "/properties",
            format!("must be an object, found {}", json_type(props)),
        ));
    }
    if let Some(required) = obj.get("required") {
        let Some(items) = required.as_array() else {
            return Err(invalid(
                "/required",
                "must be an array of property names".to_owned(),
            ));
        };
        for (i, item) in items.iter().enumerate() {
            if !item.is_string() {
                return Err(invalid(
                    &format!("/required/{i}"),
                    "must be a string".to_owned(),
                ));
            }
        }
    }
    Ok(())
}

pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Builds a [`ToolSpec`]; see [`ToolSpec::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct ToolSpecBuilder {
    name: String,
    description: Option<String>,
    parameters: Option<Value>,
    tags: Vec<String>,
    timeout: Option<Duration>,
    retry: RetryPolicy,
    version: String,
    metadata: Map<String, Value>,
    kind: ToolKind,
    policy: ToolPolicy,
}

impl ToolSpecBuilder {
    /// What the tool does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The JSON Schema of the arguments. Defaults to an object with no properties.
    pub fn parameters(mut self, schema: Value) -> Self {
        self.parameters = Some(schema);
        self
    }

    /// Derives the parameter schema from a Rust type (see [`crate::schema_for`]).
    pub fn parameters_from<T: schemars::JsonSchema>(self) -> Self {
        self.parameters(crate::schema::schema_for::<T>())
    }

    /// Adds one tag (group).
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        let tag = tag.into();
        if !self.tags.contains(&tag) {
            self.tags.push(tag);
        }
        self
    }

    /// Adds several tags.
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for tag in tags {
            self = self.tag(tag);
        }
        self
    }

    /// Longest a call may run.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How failures are retried.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Version of the definition (default `1.0.0`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Sets one metadata entry.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Where the tool comes from.
    pub fn kind(mut self, kind: ToolKind) -> Self {
        self.kind = kind;
        self
    }

    /// Replaces the whole policy.
    pub fn policy(mut self, policy: ToolPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Marks the tool read-only (the default) and parallel.
    pub fn read_only(mut self) -> Self {
        self.policy.effect = Effect::ReadOnly;
        self.policy.parallel = true;
        self
    }

    /// Marks the tool mutating: serial and needing approval, unless changed after.
    pub fn mutating(mut self) -> Self {
        self.policy.effect = Effect::Mutating;
        self.policy.parallel = false;
        self.policy.needs_approval = true;
        self
    }

    /// Whether calls may run alongside others of the same turn.
    pub fn parallel(mut self, parallel: bool) -> Self {
        self.policy.parallel = parallel;
        self
    }

    /// Whether calls need approval by default.
    pub fn needs_approval(mut self, needs: bool) -> Self {
        self.policy.needs_approval = needs;
        self
    }

    /// Output cap in bytes and what happens past it.
    pub fn max_output(mut self, bytes: usize, on_overflow: Overflow) -> Self {
        self.policy.max_output_bytes = bytes;
        self.policy.on_overflow = on_overflow;
        self
    }

    /// Whether results may be cached by arguments.
    pub fn cacheable(mut self, cacheable: bool) -> Self {
        self.policy.cacheable = cacheable;
        self
    }

    /// Marks a mutating tool safe to run twice; see [`ToolPolicy::idempotent`].
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.policy.idempotent = idempotent;
        self
    }

    /// Marks calls that wait on a person or another agent; see [`ToolPolicy::waits`].
    pub fn waits(mut self, waits: bool) -> Self {
        self.policy.waits = waits;
        self
    }

    /// Returns the spec without failing, for definitions checked before run time.
    ///
    /// `#[tool]` checks names, tags and descriptions at compile time and uses
    /// this as the fallback of [`build`](Self::build), so `Tool::spec` never
    /// panics. Nothing is validated here: a name `build` would reject is made
    /// valid with [`ToolName::sanitized`]; tags and the parameter schema are
    /// still checked by [`ToolHandle::new`](crate::ToolHandle::new) when the
    /// tool is wrapped or registered.
    pub fn build_unchecked(self) -> ToolSpec {
        ToolSpec {
            name: ToolName::new(&self.name).unwrap_or_else(|_| ToolName::sanitized(&self.name)),
            description: self.description.unwrap_or_default(),
            parameters: self
                .parameters
                .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
            tags: self.tags,
            timeout: self.timeout,
            retry: self.retry,
            version: self.version,
            metadata: self.metadata,
            kind: self.kind,
            policy: self.policy,
        }
    }

    /// Validates and returns the spec.
    ///
    /// # Errors
    /// [`SpecError`] naming the bad name, tag or schema location, or a missing description.
    pub fn build(self) -> Result<ToolSpec, SpecError> {
        let name = ToolName::new(&self.name)?;
        let description =
            self.description
                .filter(|d| !d.trim().is_empty())
                .ok_or(SpecError::Missing {
                    tool: self.name.clone(),
                    field: "description",
                })?;
        let spec = ToolSpec {
            name,
            description,
            parameters: self
                .parameters
                .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
            tags: self.tags,
            timeout: self.timeout,
            retry: self.retry,
            version: self.version,
            metadata: self.metadata,
            kind: self.kind,
            policy: self.policy,
        };
        spec.validate()?;
        Ok(spec)
    }
}

use crate::duration_serde::{millis, opt_millis};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builder_validates_schema_root() {
        let err = ToolSpec::builder("x")
            .description("d")
            .parameters(json!({"type": "string"}));
        assert_eq!(
            err.build().unwrap_err().to_string(),
            "invalid parameters schema for `x` at /type: must be \"object\", found \"string\""
        );
        let err = ToolSpec::builder("x")
            .description("d")
            .parameters(json!([]));
        assert!(
            err.build()
                .unwrap_err()
                .to_string()
                .contains("must be a JSON object, found array")
        );
    }

    #[test]
    fn builder_requires_description_and_valid_tags() {
        let err = ToolSpec::builder("x").build().unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool `x` has no description; set it with `.description(..)`"
        );
        let err = ToolSpec::builder("x")
            .description("d")
            .tag("bad tag")
            .build()
            .unwrap_err();
        assert!(err.to_string().starts_with("invalid tag \"bad tag\""));
        assert!(
            ToolSpec::builder("x")
                .description("d")
                .tag("mcp:github")
                .build()
                .is_ok()
        );
    }

    #[test]
    fn spec_round_trips_through_json() {
        let spec = ToolSpec::builder("shell_exec")
            .description("run a command")
            .tags(["shell"])
            .timeout(Duration::from_secs(30))
            .retry(RetryPolicy::retries(2))
            .mutating()
            .build()
            .unwrap();
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(json["timeout_ms"], 30_000);
        let back: ToolSpec = serde_json::from_value(json).unwrap();
        assert_eq!(back, spec);
    }

    #[test]
    fn backoff_grows_and_caps() {
        let r = RetryPolicy::retries(5);
        assert_eq!(r.backoff(1), Duration::from_millis(100));
        assert_eq!(r.backoff(2), Duration::from_millis(200));
        assert_eq!(r.backoff(10), Duration::from_secs(5));
    }
}
