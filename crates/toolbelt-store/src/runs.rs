//! Agent runs: status (incl. `waiting` and `interrupted`), input, transcript and outcome.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::error::{Entity, Result, StoreError};
use crate::revision::{Revision, Table, check_revision};
use crate::store::{Store, decode_json, now_ms, to_json};

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// Accepted, not started.
    Queued,
    /// The loop is running.
    Running,
    /// Waiting for an approval or an answer from a person.
    Waiting,
    /// The process running it stopped before it finished.
    Interrupted,
    /// Finished with an answer.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled by a person.
    Cancelled,
}

impl RunStatus {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Interrupted => "interrupted",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses the stored spelling.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] naming the allowed values.
    pub fn parse(text: &str) -> Result<Self> {
        Ok(match text {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "waiting" => Self::Waiting,
            "interrupted" => Self::Interrupted,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            other => {
                return Err(StoreError::invalid(
                    "status",
                    format!(
                        "`{other}` is not one of queued, running, waiting, interrupted, completed, failed, cancelled"
                    ),
                ));
            }
        })
    }

    /// Whether the run has ended.
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A stored run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RunRecord {
    /// UUID v7 (time-ordered).
    pub id: String,
    /// The agent's name.
    pub agent: String,
    /// Where the run is.
    pub status: RunStatus,
    /// What the run was asked (JSON).
    pub input: Value,
    /// The transcript so far (JSON, as the agent runtime serialises it).
    pub transcript: Value,
    /// The answer, when finished.
    pub output: Option<Value>,
    /// The error, when failed.
    pub error: Option<String>,
    /// Who started it.
    pub actor: Option<String>,
    /// Bumped by every update.
    pub revision: i64,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub updated_at: i64,
    /// Unix ms, when finished.
    pub finished_at: Option<i64>,
}

/// Fields of a run to change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RunUpdate {
    /// New status.
    pub status: Option<RunStatus>,
    /// New transcript.
    pub transcript: Option<Value>,
    /// The answer.
    pub output: Option<Value>,
    /// The error.
    pub error: Option<String>,
}

impl RunUpdate {
    /// An update setting `status`.
    pub fn status(status: RunStatus) -> Self {
        Self {
            status: Some(status),
            ..Self::default()
        }
    }

    /// Also sets the transcript.
    pub fn with_transcript(mut self, transcript: Value) -> Self {
        self.transcript = Some(transcript);
        self
    }

    /// Also sets the answer.
    pub fn with_output(mut self, output: Value) -> Self {
        self.output = Some(output);
        self
    }

    /// Also sets the error.
    pub fn with_error(mut self, error: impl Into<String>) -> Self {
        self.error = Some(error.into());
        self
    }
}

const SELECT_RUN: &str = "SELECT id, agent, status, input, transcript, output, error, actor, revision, created_at, updated_at, finished_at FROM runs";

fn run_from_row(row: &AnyRow) -> Result<RunRecord> {
    let id: String = row.try_get("id")?;
    let output: Option<String> = row.try_get("output")?;
    let output = output
        .map(|text| serde_json::from_str(&text))
        .transpose()
        .map_err(|e| StoreError::Corrupt {
            entity: Entity::Run,
            name: id.clone(),
            field: "output",
            reason: e.to_string(),
        })?;
    Ok(RunRecord {
        agent: row.try_get("agent")?,
        status: RunStatus::parse(&row.try_get::<String, _>("status")?)?,
        input: decode_json(row, "input", Entity::Run, &id)?,
        transcript: decode_json(row, "transcript", Entity::Run, &id)?,
        output,
        error: row.try_get("error")?,
        actor: row.try_get("actor")?,
        revision: row.try_get("revision")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        finished_at: row.try_get("finished_at")?,
        id,
    })
}

/// Agent runs: the operations of that aggregate, from [`Store::runs`].
#[derive(Debug, Clone, Copy)]
pub struct Runs<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// Agent runs.
    pub fn runs(&self) -> Runs<'_> {
        Runs { store: self }
    }
}

impl Runs<'_> {
    /// Records a new run of `agent` in status `queued` with an empty transcript.
    ///
    /// # Errors
    /// The database's error.
    pub async fn create(
        &self,
        agent: &str,
        input: &Value,
        actor: Option<&str>,
    ) -> Result<RunRecord> {
        let id = uuid::Uuid::now_v7().to_string();
        let at = now_ms();
        sqlx::query(
            "INSERT INTO runs (id, agent, status, input, transcript, actor, revision, created_at, updated_at) VALUES ($1, $2, 'queued', $3, '[]', $4, 1, $5, $5)",
        )
        .bind(id.as_str())
        .bind(agent)
        .bind(to_json(input, "input")?)
        .bind(actor)
        .bind(at)
        .execute(self.store.pool())
        .await?;
        self.get(&id).await
    }

    /// Applies `update` to run `id`; a finishing status sets `finished_at`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Conflict`] when `expected_revision` is stale.
    pub async fn update(
        &self,
        id: &str,
        update: &RunUpdate,
        expected_revision: Revision,
    ) -> Result<RunRecord> {
        let mut tx = self.store.begin().await?;
        check_revision(&mut tx, Table::Runs, id, expected_revision).await?;
        let at = now_ms();
        let finished = update.status.filter(|s| s.is_finished()).map(|_| at);
        sqlx::query(
            "UPDATE runs SET status = COALESCE($1, status), transcript = COALESCE($2, transcript), output = COALESCE($3, output), error = COALESCE($4, error), finished_at = COALESCE($5, finished_at), updated_at = $6 WHERE id = $7",
        )
        .bind(update.status.map(RunStatus::as_str))
        .bind(update.transcript.as_ref().map(|t| to_json(t, "transcript")).transpose()?)
        .bind(update.output.as_ref().map(|o| to_json(o, "output")).transpose()?)
        .bind(update.error.as_deref())
        .bind(finished)
        .bind(at)
        .bind(id)
        .execute(&mut **tx)
        .await?;
        tx.commit().await?;
        self.get(id).await
    }

    /// Run `id`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub async fn get(&self, id: &str) -> Result<RunRecord> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("{SELECT_RUN} WHERE id = $1")))
            .bind(id)
            .fetch_optional(self.store.pool())
            .await?
            .ok_or_else(|| StoreError::not_found(Entity::Run, id))?;
        run_from_row(&row)
    }

    /// The newest runs, optionally of one agent and/or in one status, newest first.
    ///
    /// # Errors
    /// The database's error.
    pub async fn list(
        &self,
        agent: Option<&str>,
        status: Option<RunStatus>,
        limit: i64,
    ) -> Result<Vec<RunRecord>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT_RUN} WHERE ($1 IS NULL OR agent = $1) AND ($2 IS NULL OR status = $2) ORDER BY created_at DESC, id DESC LIMIT $3"
        )))
        .bind(agent)
        .bind(status.map(RunStatus::as_str))
        .bind(limit)
        .fetch_all(self.store.pool())
        .await?;
        rows.iter().map(run_from_row).collect()
    }

    /// The runs in `status` whose transcript holds the JSON string `text` (for example a
    /// pending approval's id), newest first, at most `limit`. The match is on the stored
    /// text, in the database (no cap on how many runs are searched); the caller checks
    /// where in the transcript the string is.
    ///
    /// # Errors
    /// The database's error.
    pub async fn mentioning(
        &self,
        status: RunStatus,
        text: &str,
        limit: i64,
    ) -> Result<Vec<RunRecord>> {
        // The string as it is stored (JSON-quoted), with LIKE's wildcards and its escape
        // character taken literally. SQLite's LIKE ignores ASCII case: a near miss
        // the caller's check drops.
        let quoted = serde_json::to_string(text).unwrap_or_default();
        let mut pattern = String::with_capacity(quoted.len() + 2);
        pattern.push('%');
        for c in quoted.chars() {
            if matches!(c, '%' | '_' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push('%');
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT_RUN} WHERE status = $1 AND transcript LIKE $2 ESCAPE '\\' ORDER BY created_at DESC, id DESC LIMIT $3"
        )))
        .bind(status.as_str())
        .bind(pattern)
        .bind(limit)
        .fetch_all(self.store.pool())
        .await?;
        rows.iter().map(run_from_row).collect()
    }

    /// Marks every `queued`, `running` or `waiting` run as `interrupted` (call at start-up of a
    /// single-instance server); returns how many.
    ///
    /// # Errors
    /// The database's error.
    pub async fn interrupt_unfinished(&self) -> Result<u64> {
        let done = sqlx::query(
            "UPDATE runs SET status = 'interrupted', revision = revision + 1, updated_at = $1 WHERE status IN ('queued', 'running', 'waiting')",
        )
        .bind(now_ms())
        .execute(self.store.pool())
        .await?;
        Ok(done.rows_affected())
    }
}
