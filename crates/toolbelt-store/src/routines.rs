//! [`StoreRoutines`]: the `routine` tool's [`RoutineStore`] in SQLite or Postgres, and the
//! record of each occurrence ([`RoutineRun`]).

use std::sync::Arc;

use serde::Serialize;
use sqlx::Row;
use sqlx::any::AnyRow;
use toolbelt_core::BoxFuture;
use toolbelt_persist::{
    MissedPolicy, RoutineDraft, RoutineError, RoutineInfo, RoutineStore, Schedule,
};

use crate::clock::{Clock, SystemClock};
use crate::error::{Entity, StoreError};
use crate::store::Store;

pub(crate) fn backend(err: impl Into<StoreError>) -> RoutineError {
    RoutineError::Backend(Box::new(err.into()))
}

/// Routines in the store's database; cheap to clone.
#[derive(Clone)]
pub struct StoreRoutines {
    pub(crate) store: Store,
    pub(crate) clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for StoreRoutines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreRoutines").finish_non_exhaustive()
    }
}

/// A stored routine with what the scheduler needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RoutineRow {
    pub(crate) info: RoutineInfo,
    pub(crate) anchor_at: i64,
    pub(crate) run_requested_at: Option<i64>,
}

pub(crate) const ROUTINE_COLUMNS: &str = "r.name, r.agent, r.prompt, r.schedule, r.missed, r.paused, r.anchor_at, \
     r.next_due, r.run_requested_at, r.created_at, \
     (SELECT rr.status FROM routine_runs rr WHERE rr.routine = r.name ORDER BY rr.due_at DESC, rr.id DESC LIMIT 1) AS last_status";

pub(crate) fn decode_routine(row: &AnyRow) -> Result<RoutineRow, RoutineError> {
    let get = |e: sqlx::Error| backend(e);
    let name: String = row.try_get("name").map_err(get)?;
    let schedule: String = row.try_get("schedule").map_err(get)?;
    let schedule: Schedule = serde_json::from_str(&schedule).map_err(|e| {
        backend(StoreError::Corrupt {
            entity: Entity::Routine,
            name: name.clone(),
            field: "schedule",
            reason: e.to_string(),
        })
    })?;
    let missed: String = row.try_get("missed").map_err(get)?;
    let run_requested_at: Option<i64> = row.try_get("run_requested_at").map_err(get)?;
    Ok(RoutineRow {
        info: RoutineInfo {
            agent: row.try_get("agent").map_err(get)?,
            prompt: row.try_get("prompt").map_err(get)?,
            schedule,
            missed: MissedPolicy::parse(&missed)?,
            paused: row.try_get::<i64, _>("paused").map_err(get)? != 0,
            next_due_ms: row.try_get("next_due").map_err(get)?,
            run_requested: run_requested_at.is_some(),
            last_status: row.try_get("last_status").map_err(get)?,
            created_at_ms: row.try_get("created_at").map_err(get)?,
            name,
        },
        anchor_at: row.try_get("anchor_at").map_err(get)?,
        run_requested_at,
    })
}

/// One recorded occurrence of a routine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RoutineRun {
    /// Row id.
    pub id: i64,
    /// The routine.
    pub routine: String,
    /// The agent it ran.
    pub agent: String,
    /// The occurrence (Unix ms); for `run now`, when it was asked for.
    pub due_at: i64,
    /// Asked for with `run now` rather than by the schedule.
    pub manual: bool,
    /// `running`, `completed`, `failed`, `interrupted` or `missed`.
    pub status: String,
    /// The scheduler instance that claimed it.
    pub claimed_by: String,
    /// When it was claimed.
    pub claimed_at: i64,
    /// When it ended.
    pub finished_at: Option<i64>,
    /// The agent run it started (the run log's id), when the runner reported one.
    pub run_id: Option<String>,
    /// Error text or reason.
    pub detail: Option<String>,
}

fn decode_run(row: &AnyRow) -> Result<RoutineRun, sqlx::Error> {
    Ok(RoutineRun {
        id: row.try_get("id")?,
        routine: row.try_get("routine")?,
        agent: row.try_get("agent")?,
        due_at: row.try_get("due_at")?,
        manual: row.try_get::<i64, _>("manual")? != 0,
        status: row.try_get("status")?,
        claimed_by: row.try_get("claimed_by")?,
        claimed_at: row.try_get("claimed_at")?,
        finished_at: row.try_get("finished_at")?,
        run_id: row.try_get("run_id")?,
        detail: row.try_get("detail")?,
    })
}

impl StoreRoutines {
    /// Routines in `store`, reading the system clock.
    pub fn new(store: Store) -> Self {
        Self::with_clock(store, Arc::new(SystemClock))
    }

    /// Routines in `store`, reading `clock` (tests use a manual clock).
    pub fn with_clock(store: Store, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    /// The routine `name`.
    ///
    /// # Errors
    /// [`RoutineError::NotFound`], or the database's error.
    pub async fn get(&self, name: &str) -> Result<RoutineInfo, RoutineError> {
        let sql = format!("SELECT {ROUTINE_COLUMNS} FROM routines r WHERE r.name = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(name)
            .fetch_optional(self.store.pool())
            .await
            .map_err(backend)?
            .ok_or_else(|| RoutineError::NotFound {
                name: name.to_owned(),
            })?;
        Ok(decode_routine(&row)?.info)
    }

    async fn insert(&self, draft: RoutineDraft) -> Result<RoutineInfo, RoutineError> {
        draft.validate()?;
        let now = self.clock.now_ms();
        let next = draft.schedule.next_after(now, now)?;
        let schedule = serde_json::to_string(&draft.schedule)
            .map_err(|e| RoutineError::invalid("/schedule", e.to_string()))?;
        let name = draft.name.trim().to_owned();
        let result = sqlx::query(
            "INSERT INTO routines (name, agent, prompt, schedule, missed, paused, anchor_at, next_due, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, 0, $6, $7, $6, $6) ON CONFLICT (name) DO NOTHING",
        )
        .bind(&name)
        .bind(draft.agent.trim())
        .bind(draft.prompt.trim())
        .bind(&schedule)
        .bind(draft.missed.as_str())
        .bind(now)
        .bind(next)
        .execute(self.store.pool())
        .await
        .map_err(backend)?;
        if result.rows_affected() == 0 {
            return Err(RoutineError::AlreadyExists { name });
        }
        self.get(&name).await
    }

    /// Every routine, by name.
    ///
    /// # Errors
    /// The database's error.
    pub async fn all(&self) -> Result<Vec<RoutineInfo>, RoutineError> {
        let sql = format!("SELECT {ROUTINE_COLUMNS} FROM routines r ORDER BY r.name");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(self.store.pool())
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|r| decode_routine(r).map(|r| r.info))
            .collect()
    }

    async fn pause(&self, name: &str, paused: bool) -> Result<RoutineInfo, RoutineError> {
        let info = self.get(name).await?;
        let now = self.clock.now_ms();
        // Resuming starts from now: what fell due while paused is not owed.
        let next = if paused {
            None
        } else {
            let anchor: i64 = sqlx::query_scalar("SELECT anchor_at FROM routines WHERE name = $1")
                .bind(name)
                .fetch_one(self.store.pool())
                .await
                .map_err(backend)?;
            info.schedule.next_after(now, anchor)?
        };
        sqlx::query(
            "UPDATE routines SET paused = $1, next_due = $2, updated_at = $3 WHERE name = $4",
        )
        .bind(i64::from(paused))
        .bind(next)
        .bind(now)
        .bind(name)
        .execute(self.store.pool())
        .await
        .map_err(backend)?;
        self.get(name).await
    }

    async fn remove(&self, name: &str) -> Result<(), RoutineError> {
        let done = sqlx::query("DELETE FROM routines WHERE name = $1")
            .bind(name)
            .execute(self.store.pool())
            .await
            .map_err(backend)?;
        if done.rows_affected() == 0 {
            return Err(RoutineError::NotFound {
                name: name.to_owned(),
            });
        }
        Ok(())
    }

    async fn request_run(&self, name: &str) -> Result<RoutineInfo, RoutineError> {
        let done = sqlx::query(
            "UPDATE routines SET run_requested_at = $1, updated_at = $1 WHERE name = $2",
        )
        .bind(self.clock.now_ms())
        .bind(name)
        .execute(self.store.pool())
        .await
        .map_err(backend)?;
        if done.rows_affected() == 0 {
            return Err(RoutineError::NotFound {
                name: name.to_owned(),
            });
        }
        self.get(name).await
    }

    /// Recorded occurrences, newest first; only `routine`'s when given.
    ///
    /// # Errors
    /// The database's error.
    pub async fn runs(
        &self,
        routine: Option<&str>,
        limit: i64,
    ) -> Result<Vec<RoutineRun>, RoutineError> {
        let rows = match routine {
            Some(name) => sqlx::query(
                "SELECT * FROM routine_runs WHERE routine = $1 ORDER BY due_at DESC, id DESC LIMIT $2",
            )
            .bind(name)
            .bind(limit),
            None => sqlx::query("SELECT * FROM routine_runs ORDER BY due_at DESC, id DESC LIMIT $1")
                .bind(limit),
        }
        .fetch_all(self.store.pool())
        .await
        .map_err(backend)?;
        rows.iter()
            .map(decode_run)
            .collect::<Result<_, _>>()
            .map_err(backend)
    }
}

impl Store {
    /// The routine tool's store over this database, on the system clock.
    pub fn routines(&self) -> StoreRoutines {
        StoreRoutines::new(self.clone())
    }
}

impl RoutineStore for StoreRoutines {
    fn create<'a>(
        &'a self,
        draft: RoutineDraft,
    ) -> BoxFuture<'a, Result<RoutineInfo, RoutineError>> {
        Box::pin(self.insert(draft))
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<RoutineInfo>, RoutineError>> {
        Box::pin(self.all())
    }

    fn set_paused<'a>(
        &'a self,
        name: &'a str,
        paused: bool,
    ) -> BoxFuture<'a, Result<RoutineInfo, RoutineError>> {
        Box::pin(self.pause(name, paused))
    }

    fn delete<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), RoutineError>> {
        Box::pin(self.remove(name))
    }

    fn run_now<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<RoutineInfo, RoutineError>> {
        Box::pin(self.request_run(name))
    }
}
