//! Who may use a tool, and when: the [`Availability`] rules stored with a tool (the check
//! against an agent is in `verdict.rs`).

use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};

/// Restrictions on a tool; empty lists restrict nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Availability {
    /// Only agents of these kinds (who may use a tool, by agent type).
    pub agent_kinds: Vec<String>,
    /// Only agents carrying every one of these labels.
    pub agent_labels: Vec<String>,
    /// Capabilities the agent must declare (attributes the agent must have).
    pub capabilities: Vec<String>,
    /// Conditions on the environment (a condition function, written as data).
    pub conditions: Vec<Condition>,
}

/// A condition on the environment a tool needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Condition {
    /// A secret with this name is present (environment or secrets file).
    Secret(String),
    /// A setting with this name is set.
    Setting(String),
    /// The MCP server with this name is healthy.
    McpHealthy(String),
    /// The current UTC time of day is within `from..to` (`HH:MM`; wraps past midnight when
    /// `from > to`).
    TimeWindow {
        /// Start, inclusive.
        from: String,
        /// End, exclusive.
        to: String,
    },
}

impl Availability {
    /// Whether no rule restricts the tool.
    pub fn is_unrestricted(&self) -> bool {
        self == &Self::default()
    }

    /// Checks the rules' own syntax (time windows).
    ///
    /// # Errors
    /// [`StoreError::Invalid`] naming `conditions[i].time_window.from` and the expected form.
    pub fn validate(&self) -> Result<()> {
        for (i, condition) in self.conditions.iter().enumerate() {
            if let Condition::TimeWindow { from, to } = condition {
                parse_hhmm(from).ok_or_else(|| {
                    StoreError::invalid(
                        format!("conditions[{i}].time_window.from"),
                        format!("`{from}` is not a time of day HH:MM (00:00 to 23:59)"),
                    )
                })?;
                parse_hhmm(to).ok_or_else(|| {
                    StoreError::invalid(
                        format!("conditions[{i}].time_window.to"),
                        format!("`{to}` is not a time of day HH:MM (00:00 to 23:59)"),
                    )
                })?;
            }
        }
        Ok(())
    }
}

pub(crate) fn parse_hhmm(text: &str) -> Option<u32> {
    let (h, m) = text.split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60 && text.len() == 5).then_some(h * 60 + m)
}
