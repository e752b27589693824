//! Error types, one per concern.
//!
//! A [`ToolError`] is an outcome the model sees and can act on (it travels as
//! the tool result); the other errors are for the host program.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A tool definition that cannot be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// A tool or tag name outside the accepted character set or length.
    #[error("invalid {what} {name:?}: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// What was being named (`tool name`, `tag`).
        what: &'static str,
        /// Why it was rejected.
        reason: String,
    },
    /// The parameters are not a JSON Schema object that LLM APIs accept.
    #[error("invalid parameters schema for `{tool}` at {pointer}: {reason}")]
    InvalidSchema {
        /// The tool whose schema is wrong.
        tool: String,
        /// JSON pointer into the schema.
        pointer: String,
        /// What is wrong there.
        reason: String,
    },
    /// A required field of the spec builder was not set.
    #[error("tool `{tool}` has no {field}; set it with `.{field}(..)`")]
    Missing {
        /// The tool being built.
        tool: String,
        /// The missing field.
        field: &'static str,
    },
}

/// A registry operation that cannot be carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A tool with this name is already registered.
    #[error(
        "a tool named `{name}` is already registered (version {existing_version}); remove it first or use `replace`"
    )]
    Duplicate {
        /// The clashing name.
        name: String,
        /// The version already registered.
        existing_version: String,
    },
    /// No tool with this name is registered.
    #[error("no tool named `{name}`{}", did_you_mean(.nearest))]
    NotFound {
        /// The missing name.
        name: String,
        /// Registered names closest to it, best first.
        nearest: Vec<String>,
    },
    /// The definition itself is invalid.
    #[error(transparent)]
    Spec(#[from] SpecError),
}

/// A selection expression such as `"file,shell,-shell_exec"` that does not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectionError {
    /// An item is neither a known group nor a known tool.
    #[error("unknown group or tool `{name}` in selection; known groups: {}{}", list_or_none(.known_groups), did_you_mean(.nearest))]
    Unknown {
        /// The unresolved item.
        name: String,
        /// Closest groups and tool names, best first.
        nearest: Vec<String>,
        /// Every group the registry knows, sorted.
        known_groups: Vec<String>,
    },
    /// `tag:x` named a group that does not exist.
    #[error("unknown group `{name}`; known groups: {}{}", list_or_none(.known_groups), did_you_mean(.nearest))]
    UnknownGroup {
        /// The missing group.
        name: String,
        /// Closest group names.
        nearest: Vec<String>,
        /// Every group the registry knows, sorted.
        known_groups: Vec<String>,
    },
    /// `tool:x` named a tool that does not exist.
    #[error("unknown tool `{name}` in selection{}", did_you_mean(.nearest))]
    UnknownTool {
        /// The missing tool.
        name: String,
        /// Closest tool names.
        nearest: Vec<String>,
    },
    /// The expression has a syntax error at `position` (0-based item index).
    #[error("invalid selection item {position} ({item:?}): {reason}")]
    Syntax {
        /// Index of the item among the comma-separated items.
        position: usize,
        /// The item text.
        item: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// One broken rule of a tool's parameter schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// JSON pointer to the offending value in the arguments (`""` is the root).
    pub pointer: String,
    /// JSON pointer to the schema keyword that failed, e.g. `/properties/path/type`.
    pub schema_path: String,
    /// Human and model readable description of the failure.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "at {at}: {}", self.message)?;
        // Checks made by the tool itself have no schema rule to name.
        if !self.schema_path.is_empty() {
            write!(f, " (rule {})", self.schema_path)?;
        }
        Ok(())
    }
}

/// The coarse category of a [`ToolError`], for metrics and policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// The model named a tool that is not in its toolset.
    UnknownTool,
    /// The arguments broke the parameter schema.
    InvalidArguments,
    /// The call exceeded its timeout.
    Timeout,
    /// A policy or a person refused the call.
    Denied,
    /// The run was cancelled while the call was in flight.
    Cancelled,
    /// The tool ran and failed.
    Failed,
}

/// Why a tool call did not produce output.
///
/// Every variant renders to a message that tells the model what to do next,
/// so it is returned to the model as the tool result rather than ending the run.
///
/// As JSON it is tagged by `kind` (the [`ToolErrorKind`] spelling), with `after_ms` for timeouts.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolError {
    /// The tool is not in the toolset.
    #[error("unknown tool `{name}`{}", did_you_mean(.nearest))]
    UnknownTool {
        /// The requested name.
        name: String,
        /// The nearest available names, best first.
        nearest: Vec<String>,
    },
    /// The arguments do not satisfy the parameter schema.
    #[error("invalid arguments: {}", join_violations(.violations))]
    InvalidArguments {
        /// Each broken rule, with the JSON pointer of the offending value.
        violations: Vec<Violation>,
    },
    /// The call did not finish in time.
    #[error("timed out after {}", humanize(*.after))]
    Timeout {
        /// The timeout that elapsed.
        #[serde(rename = "after_ms", with = "crate::duration_serde::millis")]
        after: Duration,
    },
    /// The call was refused by policy or by a person.
    #[error("denied: {reason}")]
    Denied {
        /// Why it was refused.
        reason: String,
    },
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The tool ran and reported a failure.
    #[error("{message}")]
    Failed {
        /// What went wrong, worded for the model.
        message: String,
        /// Whether the same call may succeed if tried again.
        retryable: bool,
    },
}

impl ToolError {
    /// A permanent failure with `message`.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            retryable: false,
        }
    }

    /// A transient failure that the executor may retry under the tool's retry policy.
    pub fn retryable(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            retryable: true,
        }
    }

    /// Invalid arguments found by the tool itself (beyond the schema).
    pub fn invalid_argument(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidArguments {
            violations: vec![Violation {
                pointer: pointer.into(),
                schema_path: String::new(),
                message: message.into(),
            }],
        }
    }

    /// The category of this error.
    pub fn kind(&self) -> ToolErrorKind {
        match self {
            Self::UnknownTool { .. } => ToolErrorKind::UnknownTool,
            Self::InvalidArguments { .. } => ToolErrorKind::InvalidArguments,
            Self::Timeout { .. } => ToolErrorKind::Timeout,
            Self::Denied { .. } => ToolErrorKind::Denied,
            Self::Cancelled => ToolErrorKind::Cancelled,
            Self::Failed { .. } => ToolErrorKind::Failed,
        }
    }

    /// Whether the executor may retry the call.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Failed {
                retryable: true,
                ..
            } | Self::Timeout { .. }
        )
    }

    /// The text sent back to the model as the tool result.
    pub fn to_model_message(&self) -> String {
        match self {
            Self::InvalidArguments { .. } => {
                format!("error: {self}. Fix the arguments and call the tool again.")
            }
            Self::UnknownTool { nearest, .. } => {
                // "did you mean `x`?" already ends the sentence.
                let stop = if nearest.is_empty() { "." } else { "" };
                format!("error: {self}{stop} Use one of the tools you were given.")
            }
            _ => format!("error: {self}"),
        }
    }
}

pub(crate) fn did_you_mean(nearest: &[String]) -> String {
    match nearest {
        [] => String::new(),
        [one] => format!("; did you mean `{one}`?"),
        many => format!(
            "; did you mean one of {}?",
            many.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.join(", ")
    }
}

fn join_violations(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn humanize(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}
