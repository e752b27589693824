//! [`StoreError`]: what can go wrong reading or writing the store.

/// An error from the store. Messages name the record, the field or the versions involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No record of that kind has that name.
    #[error("{kind} `{name}` not found")]
    NotFound {
        /// `tool`, `agent`, `tool version`, `run`, `token`, `mcp server`, `skill`.
        kind: &'static str,
        /// The name or id asked for.
        name: String,
    },
    /// A record of that kind already has that name.
    #[error("{kind} `{name}` already exists; update it instead or pick another name")]
    AlreadyExists {
        /// `tool`, `agent`, `token`, `mcp server`.
        kind: &'static str,
        /// The clashing name.
        name: String,
    },
    /// Someone else changed the record since it was read (optimistic concurrency).
    #[error(
        "{kind} `{name}` was changed concurrently: expected revision {expected}, found {found}; re-read it and retry"
    )]
    Conflict {
        /// `tool`, `agent`, `run`, `mcp server`.
        kind: &'static str,
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
    #[error("corrupt {field} in stored {kind} `{name}`: {reason}")]
    Corrupt {
        /// Record kind.
        kind: &'static str,
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
    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn not_found(kind: &'static str, name: impl Into<String>) -> Self {
        Self::NotFound {
            kind,
            name: name.into(),
        }
    }
}

/// Shorthand for results of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
