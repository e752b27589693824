//! [`RoutineClaims`]: the SQL that lets each due occurrence of each routine run once, across
//! restarts and across several instances sharing one database.
//!
//! [`RoutineClaims::recover`] marks as `interrupted` the runs whose scheduler stopped
//! heart-beating for longer than the lease; [`RoutineClaims::claim`] claims due routines in
//! one write transaction — on Postgres with `SELECT … FOR UPDATE SKIP LOCKED`, so instances
//! claim disjoint routines; on SQLite the transaction holds the single write lock
//! (`BEGIN IMMEDIATE`) — inserting one `routine_runs` row per occurrence (its
//! `UNIQUE (routine, due_at, manual)` key is the exactly-once guarantee) and moving
//! `next_due` past now; [`RoutineClaims::heartbeat`] and [`RoutineClaims::finish`] keep the
//! lease of a running occurrence and record how it ended.
//!
//! Occurrences later than the grace period when claimed were missed (no scheduler ran);
//! the routine's [`MissedPolicy`] decides which of them run; the rest are recorded as
//! `missed`, never dropped silently. Time comes from a [`Clock`], so tests move a
//! [`ManualClock`] instead of sleeping. The loop that ticks, runs the claimed occurrences
//! and sleeps until the next due time is not here: it is `toolbelt_host::routines`.

use std::sync::Arc;
use std::time::Duration;

use sqlx::Row;
use toolbelt_persist::{MissedPolicy, RoutineError, Schedule};

use crate::clock::{Clock, SystemClock};
use crate::routines::{ROUTINE_COLUMNS, backend, decode_routine};
use crate::store::{Engine, Store};

/// One claimed occurrence, to be run and then recorded with [`RoutineClaims::finish`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RoutineJob {
    /// The `routine_runs` row.
    pub run_row: i64,
    /// The routine.
    pub routine: String,
    /// The agent to run.
    pub agent: String,
    /// The prompt to give it.
    pub prompt: String,
    /// The occurrence (Unix ms).
    pub due_at: i64,
    /// Asked for with `run now`.
    pub manual: bool,
}

/// How a run ended, as the runner reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobOutcome {
    /// The agent run's id in the run log, to link the occurrence to it.
    pub run_id: Option<String>,
    /// A short summary (e.g. the answer's first line).
    pub detail: Option<String>,
}

impl JobOutcome {
    /// An outcome linked to `run_id`.
    pub fn linked(run_id: impl Into<String>) -> Self {
        Self {
            run_id: Some(run_id.into()),
            detail: None,
        }
    }
}

/// Claim settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClaimConfig {
    /// This instance's name in `claimed_by` (default: a fresh UUID).
    pub instance: String,
    /// An occurrence claimed later than this after it fell due counts as missed (default 60 s).
    pub grace_ms: i64,
    /// A running occurrence whose heartbeat is older than this is interrupted (default 5 min).
    pub lease_ms: i64,
    /// Routines claimed per transaction (default 100).
    pub batch: i64,
    /// Most occurrences of one routine caught up in one claim (default 1000); older ones are
    /// counted in the `missed` record's detail rather than one row each.
    pub max_catch_up: usize,
}

impl Default for ClaimConfig {
    fn default() -> Self {
        Self {
            instance: uuid::Uuid::new_v4().to_string(),
            grace_ms: 60_000,
            lease_ms: 300_000,
            batch: 100,
            max_catch_up: 1000,
        }
    }
}

impl ClaimConfig {
    /// Names this instance.
    #[must_use]
    pub fn with_instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = instance.into();
        self
    }

    /// Sets the grace period (ms).
    #[must_use]
    pub fn with_grace_ms(mut self, ms: i64) -> Self {
        self.grace_ms = ms;
        self
    }

    /// Sets the heartbeat lease (ms).
    #[must_use]
    pub fn with_lease_ms(mut self, ms: i64) -> Self {
        self.lease_ms = ms;
        self
    }

    /// Sets the claim batch size.
    #[must_use]
    pub fn with_batch(mut self, batch: i64) -> Self {
        self.batch = batch.max(1);
        self
    }
}

/// The claims of one scheduler: its instance name, its clock and the records it writes.
///
/// Cloning shares the queue of finished runs waiting to be written.
#[derive(Clone)]
pub struct RoutineClaims {
    store: Store,
    clock: Arc<dyn Clock>,
    config: ClaimConfig,
    finishes: Arc<FinishQueue>,
}

impl std::fmt::Debug for RoutineClaims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoutineClaims")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Which occurrences of a catch-up run, and which are recorded as missed.
fn plan(
    policy: MissedPolicy,
    occurrences: &[i64],
    now: i64,
    grace_ms: i64,
) -> (Vec<i64>, Vec<i64>) {
    let (on_time, late): (Vec<i64>, Vec<i64>) =
        occurrences.iter().partition(|o| now - **o <= grace_ms);
    match policy {
        MissedPolicy::RunAll => (occurrences.to_vec(), Vec::new()),
        MissedPolicy::Skip => (on_time, late),
        MissedPolicy::RunOnce if !on_time.is_empty() => (on_time, late),
        MissedPolicy::RunOnce => match late.split_last() {
            Some((last, rest)) => (vec![*last], rest.to_vec()),
            None => (Vec::new(), Vec::new()),
        },
    }
}

impl RoutineClaims {
    /// Claims over `store`'s routines, with the system clock and the default settings.
    pub fn new(store: Store) -> Self {
        Self {
            store,
            clock: Arc::new(SystemClock),
            config: ClaimConfig::default(),
            finishes: Arc::default(),
        }
    }

    /// Reads `clock` instead of the system clock.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Uses `config`.
    #[must_use]
    pub fn with_config(mut self, config: ClaimConfig) -> Self {
        self.config = config;
        self
    }

    /// The settings.
    pub fn config(&self) -> &ClaimConfig {
        &self.config
    }

    /// Now, by this scheduler's clock (Unix ms).
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// How often a running occurrence's heartbeat is written: a third of the lease, at
    /// least 10 ms.
    pub fn heartbeat_every(&self) -> Duration {
        Duration::from_millis(
            u64::try_from(self.config.lease_ms / 3)
                .unwrap_or(1000)
                .max(10),
        )
    }

    /// Marks runs whose heartbeat is older than the lease as `interrupted`; returns how many.
    ///
    /// # Errors
    /// The database's error.
    pub async fn recover(&self) -> Result<u64, RoutineError> {
        let now = self.clock.now_ms();
        let done = sqlx::query(
            "UPDATE routine_runs SET status = 'interrupted', finished_at = $1, \
             detail = 'the scheduler running it stopped before it finished' \
             WHERE status = 'running' AND heartbeat_at < $2",
        )
        .bind(now)
        .bind(now - self.config.lease_ms)
        .execute(self.store.pool())
        .await
        .map_err(backend)?;
        Ok(done.rows_affected())
    }

    /// Claims due occurrences (all batches) and returns the jobs to run; the missed
    /// ones are recorded and counted in `missed`.
    ///
    /// # Errors
    /// The database's error, or a stored schedule that no longer parses.
    pub async fn claim(&self, missed: &mut usize) -> Result<Vec<RoutineJob>, RoutineError> {
        let mut jobs = Vec::new();
        loop {
            let (batch_jobs, routines) = self.claim_batch(missed).await?;
            jobs.extend(batch_jobs);
            if routines < self.config.batch {
                return Ok(jobs);
            }
        }
    }

    async fn claim_batch(
        &self,
        missed_count: &mut usize,
    ) -> Result<(Vec<RoutineJob>, i64), RoutineError> {
        let now = self.clock.now_ms();
        let lock = match self.store.engine() {
            Engine::Postgres => " FOR UPDATE OF r SKIP LOCKED",
            Engine::Sqlite => "",
        };
        // The last_status sub-select is not allowed with FOR UPDATE on Postgres: select it
        // as NULL here.
        let columns = ROUTINE_COLUMNS.replace(
            "(SELECT rr.status FROM routine_runs rr WHERE rr.routine = r.name ORDER BY rr.due_at DESC, rr.id DESC LIMIT 1)",
            "NULL",
        );
        let sql = format!(
            "SELECT {columns} FROM routines r WHERE r.paused = 0 AND \
             ((r.next_due IS NOT NULL AND r.next_due <= $1) OR r.run_requested_at IS NOT NULL) \
             ORDER BY r.next_due LIMIT $2{lock}"
        );
        let mut tx = self.store.begin().await.map_err(backend)?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(now)
            .bind(self.config.batch)
            .fetch_all(&mut **tx)
            .await
            .map_err(backend)?;
        let count = i64::try_from(rows.len()).unwrap_or(i64::MAX);
        // Plan every routine's rows first, then write them in a few multi-row statements:
        // one round trip per chunk instead of one per occurrence.
        let mut inserts: Vec<NewRun> = Vec::new();
        let mut advances: Vec<(String, Option<i64>)> = Vec::with_capacity(rows.len());
        let mut prompts = std::collections::HashMap::new();
        for row in &rows {
            let routine = decode_routine(row)?;
            let info = &routine.info;
            let mut occurrences = Vec::new();
            let mut next = info.next_due_ms;
            let mut overflow = 0_u64;
            while let Some(o) = next.filter(|o| *o <= now) {
                if occurrences.len() < self.config.max_catch_up {
                    occurrences.push(o);
                    next = info.schedule.next_after(o, routine.anchor_at)?;
                } else {
                    // Too far behind: count the rest at once.
                    overflow = count_between(&info.schedule, o, now, routine.anchor_at)?;
                    next = info.schedule.next_after(now, routine.anchor_at)?;
                }
            }
            let (run, missed) = plan(info.missed, &occurrences, now, self.config.grace_ms);
            for due in &missed {
                let detail = if overflow > 0 && Some(due) == missed.last() {
                    format!(
                        "missed while no scheduler ran (policy {}); {overflow} older occurrences not listed",
                        info.missed.as_str()
                    )
                } else {
                    format!(
                        "missed while no scheduler ran (policy {})",
                        info.missed.as_str()
                    )
                };
                inserts.push(NewRun::new(info, *due, false, Some(detail)));
            }
            inserts.extend(
                run.into_iter()
                    .map(|due| NewRun::new(info, due, false, None)),
            );
            if let Some(asked) = routine.run_requested_at {
                inserts.push(NewRun::new(info, asked, true, None));
            }
            advances.push((info.name.clone(), next));
            prompts.insert(info.name.clone(), info.prompt.clone());
        }
        let mut jobs = Vec::new();
        for chunk in inserts.chunks(INSERT_CHUNK) {
            for (id, run) in self.insert_runs(&mut tx, chunk, now).await? {
                if run.detail.is_some() {
                    *missed_count += 1;
                    continue;
                }
                jobs.push(RoutineJob {
                    run_row: id,
                    prompt: prompts.get(&run.routine).cloned().unwrap_or_default(),
                    routine: run.routine.clone(),
                    agent: run.agent.clone(),
                    due_at: run.due_at,
                    manual: run.manual,
                });
            }
        }
        for chunk in advances.chunks(UPDATE_CHUNK) {
            advance_routines(&mut tx, chunk).await?;
        }
        tx.commit().await.map_err(backend)?;
        jobs.sort_by_key(|j| j.run_row);
        Ok((jobs, count))
    }

    /// Inserts `runs` in one statement; returns the ids and rows of those inserted (an
    /// occurrence some other instance already recorded is skipped by the unique key).
    async fn insert_runs<'r>(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        runs: &'r [NewRun],
        now: i64,
    ) -> Result<Vec<(i64, &'r NewRun)>, RoutineError> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        // $1 instance, $2 now; then 7 per row.
        let values = (0..runs.len())
            .map(|i| {
                let b = 3 + i * 7;
                format!(
                    "(${b}, ${}, ${}, ${}, ${}, $1, $2, $2, ${}, ${})",
                    b + 1,
                    b + 2,
                    b + 3,
                    b + 4,
                    b + 5,
                    b + 6
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "INSERT INTO routine_runs (routine, agent, due_at, manual, status, claimed_by, claimed_at, heartbeat_at, finished_at, detail) \
             VALUES {values} ON CONFLICT (routine, due_at, manual) DO NOTHING RETURNING id, routine, due_at, manual"
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&self.config.instance)
            .bind(now);
        for run in runs {
            let missed = run.detail.is_some();
            query = query
                .bind(&run.routine)
                .bind(&run.agent)
                .bind(run.due_at)
                .bind(i64::from(run.manual))
                .bind(if missed { "missed" } else { "running" })
                .bind(missed.then_some(now))
                .bind(run.detail.as_deref());
        }
        let rows = query.fetch_all(&mut **tx).await.map_err(backend)?;
        let by_key: std::collections::HashMap<(&str, i64, bool), &NewRun> = runs
            .iter()
            .map(|r| ((r.routine.as_str(), r.due_at, r.manual), r))
            .collect();
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let routine: String = row.try_get("routine").map_err(backend)?;
            let due_at: i64 = row.try_get("due_at").map_err(backend)?;
            let manual: i64 = row.try_get("manual").map_err(backend)?;
            if let Some(run) = by_key.get(&(routine.as_str(), due_at, manual != 0)) {
                out.push((row.try_get("id").map_err(backend)?, *run));
            }
        }
        Ok(out)
    }
    /// Renews the lease of the running occurrence `run_row` (the `routine_runs` row).
    ///
    /// # Errors
    /// The database's error.
    pub async fn heartbeat(&self, run_row: i64) -> Result<(), RoutineError> {
        sqlx::query(
            "UPDATE routine_runs SET heartbeat_at = $1 WHERE id = $2 AND status = 'running'",
        )
        .bind(self.clock.now_ms())
        .bind(run_row)
        .execute(self.store.pool())
        .await
        .map_err(backend)?;
        Ok(())
    }

    /// Records how the occurrence `run_row` ended: `Ok` as `completed` (linked to the run),
    /// `Err` as `failed` with the message. Returns whether it completed. An occurrence
    /// marked interrupted meanwhile stays so.
    ///
    /// # Errors
    /// The database's error.
    pub async fn finish(
        &self,
        run_row: i64,
        outcome: Result<JobOutcome, String>,
    ) -> Result<bool, RoutineError> {
        let (status, run_id, detail) = match outcome {
            Ok(o) => ("completed", o.run_id, o.detail),
            Err(e) => ("failed", None, Some(e)),
        };
        self.write_finish(Finish {
            row: run_row,
            status,
            run_id,
            detail,
            at: self.clock.now_ms(),
        })
        .await?;
        Ok(status == "completed")
    }

    /// Records how a run ended. Runs that end while another's record is being written
    /// queue up and the next writer records them all in one statement (group commit): on
    /// Postgres each commit waits for the WAL flush, so one per run would dominate.
    async fn write_finish(&self, finish: Finish) -> Result<(), RoutineError> {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        self.finishes.lock_pending().push((finish, tx));
        let _writer = self.finishes.writer.lock().await;
        if let Ok(done) = rx.try_recv() {
            // An earlier writer recorded ours with its batch.
            return done.map_err(|e| RoutineError::Backend(e.into()));
        }
        let mut batch = std::mem::take(&mut *self.finishes.lock_pending());
        // Each chunk's waiters get that chunk's result.
        while !batch.is_empty() {
            let rest = batch.split_off(batch.len().min(UPDATE_CHUNK));
            let chunk = std::mem::replace(&mut batch, rest);
            let written = record_finishes(&self.store, &chunk)
                .await
                .map_err(|e| e.to_string());
            for (_, waiter) in chunk {
                let _ = waiter.send(written.clone());
            }
        }
        match rx.try_recv() {
            Ok(done) => done.map_err(|e| RoutineError::Backend(e.into())),
            // Ours was in the batch just written and its result sent above.
            Err(_) => Err(RoutineError::Backend(
                "the scheduler lost the record of a finished run".into(),
            )),
        }
    }

    /// When the next routine falls due (Unix ms), if any is scheduled.
    ///
    /// # Errors
    /// The database's error.
    pub async fn next_due(&self) -> Result<Option<i64>, RoutineError> {
        sqlx::query_scalar("SELECT MIN(next_due) FROM routines WHERE paused = 0")
            .fetch_one(self.store.pool())
            .await
            .map_err(backend)
    }
}

/// Rows per multi-row INSERT of the claim (7 parameters each; SQLite allows 32,766).
const INSERT_CHUNK: usize = 500;
/// Rows per multi-row UPDATE (routine advances, finished runs).
const UPDATE_CHUNK: usize = 500;

/// A `routine_runs` row the claim writes: a run to start, or (with `detail`) a missed one.
#[derive(Debug)]
struct NewRun {
    routine: String,
    agent: String,
    due_at: i64,
    manual: bool,
    detail: Option<String>,
}

impl NewRun {
    fn new(
        info: &toolbelt_persist::RoutineInfo,
        due_at: i64,
        manual: bool,
        detail: Option<String>,
    ) -> Self {
        Self {
            routine: info.name.clone(),
            agent: info.agent.clone(),
            due_at,
            manual,
            detail,
        }
    }
}

/// How one run ended, waiting to be written.
#[derive(Debug)]
struct Finish {
    row: i64,
    status: &'static str,
    run_id: Option<String>,
    detail: Option<String>,
    at: i64,
}

type Waiter = tokio::sync::oneshot::Sender<Result<(), String>>;

/// Finished runs not yet written, and the lock the one writer holds.
#[derive(Default)]
struct FinishQueue {
    pending: std::sync::Mutex<Vec<(Finish, Waiter)>>,
    writer: tokio::sync::Mutex<()>,
}

impl FinishQueue {
    fn lock_pending(&self) -> std::sync::MutexGuard<'_, Vec<(Finish, Waiter)>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `CASE key WHEN $a THEN $b … END` over `n` pairs starting at parameter `first`.
fn case_over(key: &str, n: usize, first: usize, stride: usize, offset: usize) -> String {
    let arms: String = (0..n)
        .map(|i| {
            let b = first + i * stride;
            format!(" WHEN ${b} THEN ${}", b + offset)
        })
        .collect();
    format!("CASE {key}{arms} END")
}

/// Moves each routine's `next_due` and clears its run-now request, in one statement.
async fn advance_routines(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    advances: &[(String, Option<i64>)],
) -> Result<(), RoutineError> {
    if advances.is_empty() {
        return Ok(());
    }
    let names = (0..advances.len())
        .map(|i| format!("${}", 1 + i * 2))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "UPDATE routines SET next_due = {}, run_requested_at = NULL WHERE name IN ({names})",
        case_over("name", advances.len(), 1, 2, 1)
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for (name, next) in advances {
        query = query.bind(name).bind(*next);
    }
    query.execute(&mut **tx).await.map_err(backend)?;
    Ok(())
}

/// Writes how runs ended, in one statement. Only a run still `running` is finished: one
/// marked interrupted meanwhile stays so.
async fn record_finishes(store: &Store, batch: &[(Finish, Waiter)]) -> Result<(), RoutineError> {
    if batch.is_empty() {
        return Ok(());
    }
    let n = batch.len();
    // Per row: $id, $status, $run_id, $detail, $at.
    let ids = (0..n)
        .map(|i| format!("${}", 1 + i * 5))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "UPDATE routine_runs SET status = {}, run_id = {}, detail = {}, finished_at = {} \
         WHERE id IN ({ids}) AND status = 'running'",
        case_over("id", n, 1, 5, 1),
        case_over("id", n, 1, 5, 2),
        case_over("id", n, 1, 5, 3),
        case_over("id", n, 1, 5, 4),
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for (f, _) in batch {
        query = query
            .bind(f.row)
            .bind(f.status)
            .bind(f.run_id.as_deref())
            .bind(f.detail.as_deref())
            .bind(f.at);
    }
    query.execute(store.pool()).await.map_err(backend)?;
    Ok(())
}

/// Number of occurrences in `[from, to]`.
fn count_between(
    schedule: &Schedule,
    from: i64,
    to: i64,
    anchor: i64,
) -> Result<u64, RoutineError> {
    if let Schedule::Interval { seconds } = schedule {
        let step = i64::try_from(*seconds)
            .unwrap_or(i64::MAX / 2)
            .saturating_mul(1000);
        return Ok(u64::try_from((to - from) / step + 1).unwrap_or(0));
    }
    let mut n = 0;
    let mut next = Some(from);
    while let Some(o) = next.filter(|o| *o <= to) {
        n += 1;
        next = schedule.next_after(o, anchor)?;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_follow_the_policy() {
        let occ = [1_000, 2_000, 3_000];
        assert_eq!(
            plan(MissedPolicy::Skip, &occ, 3_500, 600),
            (vec![3_000], vec![1_000, 2_000])
        );
        assert_eq!(
            plan(MissedPolicy::RunOnce, &occ, 3_500, 600),
            (vec![3_000], vec![1_000, 2_000])
        );
        assert_eq!(
            plan(MissedPolicy::RunAll, &occ, 3_500, 600),
            (occ.to_vec(), vec![])
        );
        // All late: skip runs none, run_once the latest.
        assert_eq!(
            plan(MissedPolicy::Skip, &occ, 9_000, 600),
            (vec![], occ.to_vec())
        );
        assert_eq!(
            plan(MissedPolicy::RunOnce, &occ, 9_000, 600),
            (vec![3_000], vec![1_000, 2_000])
        );
    }
}
