//! [`StoreError`]: what can go wrong reading or writing the store, and the [`Entity`] it concerns.

use std::fmt;

/// The kind of record a [`StoreError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Entity {
    /// A stored tool.
    Tool,
    /// One version of a stored tool (`name@version`).
    ToolVersion,
    /// A stored agent.
    Agent,
    /// An agent's binding of a tool.
    Binding,
    /// A skill.
    Skill,
    /// An agent run.
    Run,
    /// An entry of the run log.
    RunLogEntry,
    /// A routine.
    Routine,
    /// An MCP server configuration.
    McpServer,
    /// An API token.
    Token,
    /// An agent memory.
    Memory,
}

impl Entity {
    /// The name in messages: `tool`, `tool version`, `mcp server`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::ToolVersion => "tool version",
            Self::Agent => "agent",
            Self::Binding => "binding",
            Self::Skill => "skill",
            Self::Run => "run",
            Self::RunLogEntry => "run log entry",
            Self::Routine => "routine",
            Self::McpServer => "mcp server",
            Self::Token => "token",
            Self::Memory => "memory",
        }
    }

    /// The stable code of "no such record": `tool_not_found`, `mcp_server_not_found`, ...
    pub fn not_found_code(self) -> &'static str {
        match self {
            Self::Tool => "tool_not_found",
            Self::ToolVersion => "tool_version_not_found",
            Self::Agent => "agent_not_found",
            Self::Binding => "binding_not_found",
            Self::Skill => "skill_not_found",
            Self::Run => "run_not_found",
            Self::RunLogEntry => "run_log_entry_not_found",
            Self::Routine => "routine_not_found",
            Self::McpServer => "mcp_server_not_found",
            Self::Token => "token_not_found",
            Self::Memory => "memory_not_found",
        }
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error from the store. Messages name the record, the field or the versions involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No record of that kind has that name.
    #[error("{entity} `{name}` not found")]
    NotFound {
        /// What was looked for.
        entity: Entity,
        /// The name or id asked for.
        name: String,
    },
    /// A record of that kind already has that name.
    #[error("{entity} `{name}` already exists; update it instead or pick another name")]
    AlreadyExists {
        /// What was to be created.
        entity: Entity,
        /// The clashing name.
        name: String,
    },
    /// Someone else changed the record since it was read (optimistic concurrency).
    #[error(
        "{entity} `{name}` was changed concurrently: expected revision {expected}, found {found}; re-read it and retry"
    )]
    Conflict {
        /// What was written.
        entity: Entity,
        /// The record's name.
        name: String,
        /// The revision the caller read.
        expected: i64,
        /// The revision in the database.
        found: i64,
    },
    /// Input that cannot be stored; nothing was written.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field or JSON pointer at fault, e.g. `parameters`, `tools[1]`, `http.url`.
        field: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A tool cannot be removed while agents bind it.
    #[error("tool `{name}` is bound to agent(s) {}; unbind it first", agents.join(", "))]
    InUse {
        /// The tool.
        name: String,
        /// Agents binding it.
        agents: Vec<String>,
    },
    /// The database was migrated by a newer toolbelt.
    #[error(
        "the database schema is at version {found}, newer than this build knows (up to {known}); use a newer toolbelt"
    )]
    SchemaTooNew {
        /// Highest migration applied to the database.
        found: i64,
        /// Highest migration this build carries.
        known: i64,
    },
    /// The URL names no engine the store supports.
    #[error(
        "unsupported database url scheme `{scheme}`: use sqlite://PATH, sqlite::memory: or postgres://USER@HOST/DB"
    )]
    UnsupportedUrl {
        /// The scheme found (text before `:`).
        scheme: String,
    },
    /// A stored value could not be decoded (the row was written by something else).
    #[error("corrupt {field} in stored {entity} `{name}`: {reason}")]
    Corrupt {
        /// What was read.
        entity: Entity,
        /// Record name.
        name: String,
        /// Column.
        field: &'static str,
        /// Decoder message.
        reason: String,
    },
    /// The database failed.
    #[error("database error")]
    Database(#[from] sqlx::Error),
    /// Applying migrations failed.
    #[error("migration failed")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

impl StoreError {
    /// The stable, machine-readable code of this condition (`tool_not_found`,
    /// `revision_mismatch`, `invalid_field`, ...): what an API answers with, unlike the message,
    /// which may be reworded.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound { entity, .. } => entity.not_found_code(),
            Self::AlreadyExists { .. } => "already_exists",
            Self::Conflict { .. } => "revision_mismatch",
            Self::Invalid { .. } => "invalid_field",
            Self::InUse { .. } => "tool_in_use",
            Self::SchemaTooNew { .. } => "schema_too_new",
            Self::UnsupportedUrl { .. } => "unsupported_database_url",
            Self::Corrupt { .. } => "corrupt_record",
            Self::Database(_) => "database_error",
            Self::Migrate(_) => "migration_failed",
        }
    }

    /// The entity a not-found, already-exists, conflict or corrupt-record error is about.
    pub fn entity(&self) -> Option<Entity> {
        match self {
            Self::NotFound { entity, .. }
            | Self::AlreadyExists { entity, .. }
            | Self::Conflict { entity, .. }
            | Self::Corrupt { entity, .. } => Some(*entity),
            _ => None,
        }
    }

    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn not_found(entity: Entity, name: impl Into<String>) -> Self {
        Self::NotFound {
            entity,
            name: name.into(),
        }
    }
}

/// Shorthand for results of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::{Entity, StoreError};

    const ALL: [Entity; 11] = [
        Entity::Tool,
        Entity::ToolVersion,
        Entity::Agent,
        Entity::Binding,
        Entity::Skill,
        Entity::Run,
        Entity::RunLogEntry,
        Entity::Routine,
        Entity::McpServer,
        Entity::Token,
        Entity::Memory,
    ];

    #[test]
    fn not_found_codes_are_the_entity_names_in_snake_case() {
        // The codes the API answered with before entities were typed: the message's kind
        // with spaces as underscores.
        for entity in ALL {
            let error = StoreError::not_found(entity, "x");
            let expected = format!("{}_not_found", entity.as_str().replace(' ', "_"));
            assert_eq!(error.code(), expected);
            assert_eq!(error.entity(), Some(entity));
            assert_eq!(error.to_string(), format!("{entity} `x` not found"));
        }
    }

    #[test]
    fn other_conditions_have_one_code_each() {
        let conflict = StoreError::Conflict {
            entity: Entity::Agent,
            name: "a".into(),
            expected: 1,
            found: 2,
        };
        let codes = [
            conflict.code(),
            StoreError::invalid("name", "empty").code(),
            StoreError::InUse {
                name: "t".into(),
                agents: vec!["a".into()],
            }
            .code(),
            StoreError::SchemaTooNew { found: 2, known: 1 }.code(),
        ];
        assert_eq!(
            codes,
            [
                "revision_mismatch",
                "invalid_field",
                "tool_in_use",
                "schema_too_new"
            ]
        );
    }
}
