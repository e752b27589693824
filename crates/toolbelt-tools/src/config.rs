//! Group `config`: `config` (toolbelt's effective settings, secrets redacted)
//! and `self_info` (the running agent, its tools and groups).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};
use toolbelt_core::{Effect, ToolContext, ToolError, ToolOutput, ToolSpec};
use toolbelt_macros::tool;

/// What replaces a secret value.
pub const REDACTED: &str = "[redacted]";

/// Key fragments that mark a value as secret (compared case-insensitively,
/// ignoring `-` and `_`).
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "credential",
    "authorization",
    "cookie",
    "session",
];

/// toolbelt's effective configuration as the `config` tool shows it; a context extension.
///
/// Secrets are redacted when the value is built, so the unredacted form never
/// reaches a tool: values under keys such as `api_key`, `token`, `password`
/// or `secret`, and passwords inside URLs (`postgres://user:pw@host`).
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveConfig {
    value: Value,
}

impl EffectiveConfig {
    /// Redacts and keeps `value`.
    pub fn new(mut value: Value) -> Self {
        redact(&mut value);
        Self { value }
    }

    /// Serialises `config` and redacts it.
    ///
    /// # Errors
    /// When `config` cannot be represented as JSON.
    pub fn from_serialize<T: Serialize>(config: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_value(config).map(Self::new)
    }

    /// The redacted configuration.
    pub fn value(&self) -> &Value {
        &self.value
    }
}

fn is_secret_key(key: &str) -> bool {
    let plain: String = key
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    // `max_tokens` and `tokenizer` are settings, not secrets.
    let plain = plain.replace("tokens", "").replace("tokenizer", "");
    SECRET_KEYS.iter().any(|s| plain.contains(s))
}

fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if is_secret_key(key) && !v.is_null() {
                    *v = Value::from(REDACTED);
                } else {
                    redact(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        Value::String(s) => {
            if let Some(clean) = redact_url_password(s) {
                *s = clean;
            }
        }
        _ => {}
    }
}

/// `scheme://user:password@host...` with the password replaced, or `None`.
fn redact_url_password(s: &str) -> Option<String> {
    let (scheme, rest) = s.split_once("://")?;
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    let colon = rest[..at].find(':')?;
    Some(format!(
        "{scheme}://{}:{REDACTED}{}",
        &rest[..colon],
        &rest[at..]
    ))
}

/// Show toolbelt's effective configuration (secrets redacted), whole or one section.
#[tool(tags("config"), read_only, cacheable)]
pub async fn config(
    ctx: &ToolContext,
    /// A section or setting, as a dotted path (`llm.model`) or a JSON pointer (`/llm/model`); default: everything.
    key: Option<String>,
) -> Result<ToolOutput, ToolError> {
    let config = ctx.get::<EffectiveConfig>().ok_or_else(|| {
        ToolError::failed(
            "the configuration is not available; the host must add an `EffectiveConfig` \
             extension to the tool context",
        )
    })?;
    let root = config.value();
    let value = match key.as_deref().filter(|k| !k.is_empty()) {
        None => root,
        Some(key) => {
            let pointer = if key.starts_with('/') {
                key.to_owned()
            } else {
                format!("/{}", key.replace('.', "/"))
            };
            root.pointer(&pointer).ok_or_else(|| {
                let known = root
                    .as_object()
                    .map(|m| m.keys().cloned().collect::<Vec<_>>().join(", "))
                    .unwrap_or_default();
                ToolError::invalid_argument(
                    "/key",
                    format!("no setting {key:?}; top-level sections: {known}"),
                )
            })?
        }
    };
    let mut out = ToolOutput::text(
        serde_json::to_string_pretty(value).map_err(|e| ToolError::failed(e.to_string()))?,
    );
    out.json = Some(value.clone());
    Ok(out)
}

/// One tool as `self_info` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolSummary {
    /// The tool's name.
    pub name: String,
    /// The first line of its description.
    pub summary: String,
    /// Its groups.
    pub tags: Vec<String>,
    /// Whether it changes anything.
    pub mutating: bool,
    /// Whether calls need approval by default.
    pub needs_approval: bool,
}

impl From<&ToolSpec> for ToolSummary {
    fn from(spec: &ToolSpec) -> Self {
        Self {
            name: spec.name.to_string(),
            summary: first_line(&spec.description),
            tags: spec.tags.clone(),
            mutating: spec.policy.effect == Effect::Mutating,
            needs_approval: spec.policy.needs_approval,
        }
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().trim().to_owned()
}

/// What `self_info` says about the running agent; a context extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AgentInfo {
    /// The agent's name.
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// The model it runs on, when known.
    pub model: Option<String>,
    /// toolbelt's version.
    pub toolbelt_version: String,
    /// Its tools, sorted by name.
    pub tools: Vec<ToolSummary>,
}

impl AgentInfo {
    /// An agent named `name` with no tools yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: None,
            model: None,
            toolbelt_version: env!("CARGO_PKG_VERSION").to_owned(),
            tools: Vec::new(),
        }
    }

    /// Sets what the agent is for.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the model.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Describes these tools (e.g. `toolset.specs()`).
    #[must_use]
    pub fn with_tools<'a>(mut self, specs: impl IntoIterator<Item = &'a ToolSpec>) -> Self {
        self.tools = specs.into_iter().map(ToolSummary::from).collect();
        self.tools.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }

    /// Tool names by group.
    pub fn groups(&self) -> BTreeMap<&str, Vec<&str>> {
        let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for tool in &self.tools {
            for tag in &tool.tags {
                groups.entry(tag).or_default().push(&tool.name);
            }
        }
        groups
    }
}

/// Describe the running agent: its name, model, toolbelt version, and its tools grouped by tag.
#[tool(tags("config"), read_only, cacheable)]
pub async fn self_info(ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let info = ctx.get::<AgentInfo>().ok_or_else(|| {
        ToolError::failed(
            "no description of this agent is available; the host must add an `AgentInfo` \
             extension to the tool context",
        )
    })?;
    let mut text = format!("agent: {}", info.name);
    if let Some(d) = &info.description {
        text.push_str(&format!("\npurpose: {d}"));
    }
    if let Some(m) = &info.model {
        text.push_str(&format!("\nmodel: {m}"));
    }
    text.push_str(&format!(
        "\ntoolbelt: {}\ntools ({}):",
        info.toolbelt_version,
        info.tools.len()
    ));
    for tool in &info.tools {
        let flags = match (tool.mutating, tool.needs_approval) {
            (true, true) => " [mutating, needs approval]",
            (true, false) => " [mutating]",
            (false, true) => " [needs approval]",
            (false, false) => "",
        };
        text.push_str(&format!("\n- {}{flags}: {}", tool.name, tool.summary));
    }
    let groups = info.groups();
    text.push_str("\ngroups:");
    for (group, tools) in &groups {
        text.push_str(&format!("\n- {group}: {}", tools.join(", ")));
    }
    let mut json = serde_json::to_value(info).map_err(|e| ToolError::failed(e.to_string()))?;
    if let Some(obj) = json.as_object_mut() {
        let groups: Map<String, Value> = groups
            .into_iter()
            .map(|(g, t)| (g.to_owned(), Value::from(t)))
            .collect();
        obj.insert("groups".to_owned(), Value::Object(groups));
    }
    let mut out = ToolOutput::text(text);
    out.json = Some(json);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_by_key_and_inside_urls() {
        let cfg = EffectiveConfig::new(json!({
            "llm": {"model": "gpt", "api_key": "sk-123", "API-Token": "t", "max_tokens": 9},
            "store": {"url": "postgres://app:hunter2@db:5432/x", "password": null},
            "servers": [{"client_secret": "s", "name": "a"}],
        }));
        assert_eq!(
            cfg.value(),
            &json!({
                "llm": {"model": "gpt", "api_key": REDACTED, "API-Token": REDACTED, "max_tokens": 9},
                "store": {"url": "postgres://app:[redacted]@db:5432/x", "password": null},
                "servers": [{"client_secret": REDACTED, "name": "a"}],
            })
        );
    }

    #[test]
    fn urls_without_passwords_are_untouched() {
        assert_eq!(redact_url_password("https://example.com/a@b"), None);
        assert_eq!(redact_url_password("https://user@example.com/"), None);
    }
}
