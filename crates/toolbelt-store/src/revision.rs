//! [`Revision`]: which revision of a record a write expects, and the guarded bump that checks it.

use crate::error::{Entity, Result, StoreError};

/// The revision a write expects a record to be at (optimistic concurrency).
///
/// Every stored tool, agent, MCP server and run carries a revision that each change bumps.
/// A writer that read revision `n` passes `Exactly(n)`: when someone else wrote in between,
/// the write fails with [`StoreError::Conflict`] instead of overwriting their change. `Any`
/// writes whatever the revision is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Revision {
    /// Write whatever the stored revision is.
    #[default]
    Any,
    /// Write only when the stored revision is this one.
    Exactly(i64),
}

impl Revision {
    /// Whether a record at revision `found` may be written.
    pub fn admits(self, found: i64) -> bool {
        match self {
            Self::Any => true,
            Self::Exactly(expected) => expected == found,
        }
    }
}

impl From<Option<i64>> for Revision {
    /// `None` is [`Revision::Any`].
    fn from(revision: Option<i64>) -> Self {
        revision.map_or(Self::Any, Self::Exactly)
    }
}

impl From<i64> for Revision {
    fn from(revision: i64) -> Self {
        Self::Exactly(revision)
    }
}

/// The tables whose rows carry a revision.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Table {
    Tools,
    Agents,
    McpServers,
    Runs,
}

impl Table {
    fn entity(self) -> Entity {
        match self {
            Self::Tools => Entity::Tool,
            Self::Agents => Entity::Agent,
            Self::McpServers => Entity::McpServer,
            Self::Runs => Entity::Run,
        }
    }

    /// The statements that bump the row's revision when it is any, or when it is `$2`, and
    /// the one that reads it.
    fn statements(self) -> [&'static str; 3] {
        match self {
            Self::Tools => [
                "UPDATE tools SET revision = revision + 1 WHERE name = $1",
                "UPDATE tools SET revision = revision + 1 WHERE name = $1 AND revision = $2",
                "SELECT revision FROM tools WHERE name = $1",
            ],
            Self::Agents => [
                "UPDATE agents SET revision = revision + 1 WHERE name = $1",
                "UPDATE agents SET revision = revision + 1 WHERE name = $1 AND revision = $2",
                "SELECT revision FROM agents WHERE name = $1",
            ],
            Self::McpServers => [
                "UPDATE mcp_servers SET revision = revision + 1 WHERE name = $1",
                "UPDATE mcp_servers SET revision = revision + 1 WHERE name = $1 AND revision = $2",
                "SELECT revision FROM mcp_servers WHERE name = $1",
            ],
            Self::Runs => [
                "UPDATE runs SET revision = revision + 1 WHERE id = $1",
                "UPDATE runs SET revision = revision + 1 WHERE id = $1 AND revision = $2",
                "SELECT revision FROM runs WHERE id = $1",
            ],
        }
    }
}

/// Claims the row for this transaction: bumps its revision with a guarded UPDATE (which also
/// row-locks it on Postgres, so concurrent writers serialise instead of both passing a check).
/// Fails with `NotFound` or, when `expected` is exact and differs, `Conflict`. Returns the new
/// revision. Later statements of the transaction must not bump the revision again.
pub(crate) async fn check_revision(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    table: Table,
    name: &str,
    expected: Revision,
) -> Result<i64> {
    let [bump_any, bump_exact, read] = table.statements();
    let done = match expected {
        Revision::Any => sqlx::query(bump_any).bind(name).execute(&mut **tx).await?,
        Revision::Exactly(revision) => {
            sqlx::query(bump_exact)
                .bind(name)
                .bind(revision)
                .execute(&mut **tx)
                .await?
        }
    };
    let found: Option<i64> = sqlx::query_scalar(read)
        .bind(name)
        .fetch_optional(&mut **tx)
        .await?;
    let found = found.ok_or_else(|| StoreError::not_found(table.entity(), name))?;
    match expected {
        Revision::Exactly(expected) if done.rows_affected() == 0 => Err(StoreError::Conflict {
            entity: table.entity(),
            name: name.to_owned(),
            expected,
            found,
        }),
        _ => Ok(found),
    }
}

#[cfg(test)]
mod tests {
    use super::Revision;

    #[test]
    fn any_admits_every_revision_and_exactly_only_its_own() {
        assert!(Revision::Any.admits(-1) && Revision::Any.admits(7));
        assert!(Revision::Exactly(3).admits(3));
        assert!(!Revision::Exactly(3).admits(4));
        assert_eq!(Revision::from(None), Revision::Any);
        assert_eq!(Revision::from(Some(2)), Revision::Exactly(2));
        assert_eq!(Revision::from(-1), Revision::Exactly(-1));
    }
}
