//! The pure [`availability`] check of a tool's rules against an agent and an [`Environment`],
//! that `toolbelt tools why` and the server both call, and its [`Verdict`].

use std::collections::BTreeSet;

use serde::Serialize;

use crate::agents::AgentSpec;
use crate::availability::{Condition, parse_hhmm};
use crate::stored::Stored;
use crate::tools::ToolEntry;

/// Facts about the environment the conditions are checked against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Environment {
    /// Names of secrets present.
    pub secrets: BTreeSet<String>,
    /// Names of settings that are set.
    pub settings: BTreeSet<String>,
    /// Names of healthy MCP servers.
    pub healthy_mcp_servers: BTreeSet<String>,
    /// Minutes since UTC midnight, now.
    pub minute_of_day: u32,
}

impl Environment {
    /// An environment with the current UTC time and nothing else.
    pub fn now() -> Self {
        let secs = crate::store::now_ms() / 1000;
        Self {
            minute_of_day: u32::try_from((secs / 60) % (24 * 60)).unwrap_or(0),
            ..Self::default()
        }
    }

    /// Adds present secret names.
    pub fn with_secrets<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.secrets.extend(names.into_iter().map(Into::into));
        self
    }

    /// Adds set setting names.
    pub fn with_settings<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.settings.extend(names.into_iter().map(Into::into));
        self
    }

    /// Adds healthy MCP server names.
    pub fn with_healthy_mcp_servers<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        names: I,
    ) -> Self {
        self.healthy_mcp_servers
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Sets the time of day (minutes since UTC midnight).
    pub fn at_minute(mut self, minute_of_day: u32) -> Self {
        self.minute_of_day = minute_of_day;
        self
    }
}

/// Why a tool is not available to an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Reason {
    /// The tool is disabled.
    Disabled,
    /// A compiled tool the running code no longer has.
    Missing,
    /// Neither the agent's selection nor its bindings include the tool.
    NotSelected {
        /// The agent's selection expression.
        selection: String,
    },
    /// The agent's kind is not among those allowed.
    KindNotAllowed {
        /// The agent's kind.
        kind: String,
        /// Kinds allowed.
        allowed: Vec<String>,
    },
    /// The agent lacks a label.
    LabelMissing {
        /// The label.
        label: String,
    },
    /// The agent lacks a capability.
    CapabilityMissing {
        /// The capability.
        capability: String,
    },
    /// A secret is absent.
    SecretMissing {
        /// Its name.
        name: String,
    },
    /// A setting is unset.
    SettingUnset {
        /// Its name.
        name: String,
    },
    /// An MCP server is not healthy.
    McpUnhealthy {
        /// The server.
        server: String,
    },
    /// Now is outside the tool's time window.
    OutsideTimeWindow {
        /// Start (UTC).
        from: String,
        /// End (UTC).
        to: String,
    },
    /// The agent pins a version that does not exist.
    PinnedVersionMissing {
        /// The pinned version.
        version: i64,
        /// The newest version.
        latest: i64,
    },
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Disabled => write!(
                f,
                "the tool is disabled (`toolbelt tools enable` turns it on)"
            ),
            Self::Missing => write!(
                f,
                "the tool is compiled in no longer: the running code does not have it"
            ),
            Self::NotSelected { selection } => write!(
                f,
                "the agent's selection `{selection}` does not include it and it is not bound (`toolbelt agents bind`)"
            ),
            Self::KindNotAllowed { kind, allowed } => write!(
                f,
                "agent kind `{kind}` is not allowed; allowed kinds: {}",
                allowed.join(", ")
            ),
            Self::LabelMissing { label } => write!(f, "the agent lacks the label `{label}`"),
            Self::CapabilityMissing { capability } => {
                write!(f, "the agent lacks the capability `{capability}`")
            }
            Self::SecretMissing { name } => write!(f, "the secret `{name}` is not set"),
            Self::SettingUnset { name } => write!(f, "the setting `{name}` is not set"),
            Self::McpUnhealthy { server } => write!(f, "the MCP server `{server}` is not healthy"),
            Self::OutsideTimeWindow { from, to } => {
                write!(f, "the tool is available only from {from} to {to} UTC")
            }
            Self::PinnedVersionMissing { version, latest } => write!(
                f,
                "the agent pins version {version}, which does not exist (latest is {latest})"
            ),
        }
    }
}

/// Whether a tool is available to an agent, and if not, every reason why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Verdict {
    /// The tool.
    pub tool: String,
    /// The agent.
    pub agent: String,
    /// The version the agent would get.
    pub version: i64,
    /// Empty when available.
    pub reasons: Vec<Reason>,
}

impl Verdict {
    /// Whether the tool is available.
    pub fn is_available(&self) -> bool {
        self.reasons.is_empty()
    }
}

/// Decides whether `tool` is offered to `agent` in `env`. Pure: no I/O.
///
/// `all_tags` is the set of tags of every stored tool: a selection item such as `web` names a
/// group when such a tag exists, else a tool (the grammar of [`toolbelt_core::Selection`]).
pub fn availability(
    agent: &Stored<AgentSpec>,
    tool: &ToolEntry,
    all_tags: &BTreeSet<String>,
    env: &Environment,
) -> Verdict {
    let mut reasons = Vec::new();
    if !tool.enabled {
        reasons.push(Reason::Disabled);
    }
    if tool.missing {
        reasons.push(Reason::Missing);
    }
    let binding = agent.tools.iter().find(|b| b.tool == tool.name());
    let pin = binding
        .and_then(|b| b.pinned_version)
        .or_else(|| agent.pins.get(tool.name()).copied());
    if binding.is_none()
        && !selection_includes(&agent.selection, tool.name(), &tool.spec.tags, all_tags)
    {
        reasons.push(Reason::NotSelected {
            selection: agent.selection.clone(),
        });
    }
    if let Some(version) = pin
        && (version < 1 || version > tool.latest_version)
    {
        reasons.push(Reason::PinnedVersionMissing {
            version,
            latest: tool.latest_version,
        });
    }
    let rules = &tool.availability;
    if !rules.agent_kinds.is_empty() && !rules.agent_kinds.contains(&agent.kind) {
        reasons.push(Reason::KindNotAllowed {
            kind: agent.kind.clone(),
            allowed: rules.agent_kinds.clone(),
        });
    }
    for label in &rules.agent_labels {
        if !agent.labels.contains(label) {
            reasons.push(Reason::LabelMissing {
                label: label.clone(),
            });
        }
    }
    for capability in &rules.capabilities {
        if !agent.capabilities.contains(capability) {
            reasons.push(Reason::CapabilityMissing {
                capability: capability.clone(),
            });
        }
    }
    for condition in &rules.conditions {
        match condition {
            Condition::Secret(name) if !env.secrets.contains(name) => {
                reasons.push(Reason::SecretMissing { name: name.clone() });
            }
            Condition::Setting(name) if !env.settings.contains(name) => {
                reasons.push(Reason::SettingUnset { name: name.clone() });
            }
            Condition::McpHealthy(server) if !env.healthy_mcp_servers.contains(server) => {
                reasons.push(Reason::McpUnhealthy {
                    server: server.clone(),
                });
            }
            Condition::TimeWindow { from, to } => {
                if let (Some(start), Some(end)) = (parse_hhmm(from), parse_hhmm(to)) {
                    let now = env.minute_of_day;
                    let inside = if start <= end {
                        (start..end).contains(&now)
                    } else {
                        now >= start || now < end
                    };
                    if !inside {
                        reasons.push(Reason::OutsideTimeWindow {
                            from: from.clone(),
                            to: to.clone(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    Verdict {
        tool: tool.name().to_owned(),
        agent: agent.name.clone(),
        version: pin.unwrap_or(tool.current_version),
        reasons,
    }
}

/// Whether the selection expression `selection` includes a tool named `name` with `tags`.
/// Same grammar as [`toolbelt_core::Selection`]: items, `tag:`/`tool:` prefixes, `*`, and `-`
/// exclusions applied after inclusions; only exclusions start from every tool.
pub fn selection_includes(
    selection: &str,
    name: &str,
    tags: &[String],
    all_tags: &BTreeSet<String>,
) -> bool {
    let matches = |body: &str| -> bool {
        if body == "*" {
            true
        } else if let Some(group) = body.strip_prefix("tag:") {
            tags.iter().any(|t| t == group.trim())
        } else if let Some(tool) = body.strip_prefix("tool:") {
            tool.trim() == name
        } else if all_tags.contains(body) {
            tags.iter().any(|t| t == body)
        } else {
            body == name
        }
    };
    let items: Vec<(bool, &str)> = selection
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| match item.strip_prefix('-') {
            Some(rest) => (true, rest.trim()),
            None => (false, item.strip_prefix('+').map_or(item, str::trim)),
        })
        .collect();
    if items.is_empty() {
        return false;
    }
    let only_exclusions = items.iter().all(|(exclude, _)| *exclude);
    let included = only_exclusions
        || items
            .iter()
            .any(|(exclude, body)| !exclude && matches(body));
    let excluded = items
        .iter()
        .any(|(exclude, body)| *exclude && matches(body));
    included && !excluded
}
