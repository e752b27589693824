//! The routine loop: [`Scheduler`] claims due occurrences through the store's
//! [`RoutineClaims`], runs each with a [`RoutineRunner`] while renewing its lease, and records
//! how it ended; [`AgentRoutineRunner`] runs a routine's agent as an ordinary run of the
//! [`RunRegistry`].
//!
//! A routine's run shows in the run list, goes to the run log, may wait for an approval like
//! any other, and its id is linked from the routine's history.

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolbelt_core::{BoxFuture, Extensions};
use toolbelt_persist::RoutineError;
use toolbelt_store::{JobOutcome, RoutineClaims, RoutineJob};

use crate::AgentFactory;
use crate::runs::{RunRegistry, RunStart, RunStatus};

/// Runs an agent for an occurrence.
pub trait RoutineRunner: Send + Sync + 'static {
    /// Runs `job` to the end. `Err` is recorded as `failed` with the message.
    fn run(&self, job: RoutineJob) -> BoxFuture<'_, Result<JobOutcome, String>>;
}

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TickReport {
    /// Runs marked interrupted.
    pub interrupted: u64,
    /// Occurrences claimed to run.
    pub claimed: usize,
    /// Occurrences recorded as missed.
    pub missed: usize,
    /// Of the claimed, how many completed.
    pub completed: usize,
    /// Of the claimed, how many failed.
    pub failed: usize,
}

/// The routine scheduler of one process: ticks, runs what it claimed, sleeps until the next
/// occurrence falls due.
#[derive(Clone)]
pub struct Scheduler {
    claims: RoutineClaims,
    runner: Arc<dyn RoutineRunner>,
    poll: Duration,
    jobs: TaskTracker,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("claims", &self.claims)
            .field("poll", &self.poll)
            .finish_non_exhaustive()
    }
}

impl Scheduler {
    /// A scheduler claiming with `claims` and running the occurrences with `runner`.
    pub fn new(claims: RoutineClaims, runner: Arc<dyn RoutineRunner>) -> Self {
        Self {
            claims,
            runner,
            poll: Duration::from_secs(1),
            jobs: TaskTracker::new(),
        }
    }

    /// Sets the longest sleep of [`Scheduler::run`] between ticks (default 1 s).
    #[must_use]
    pub fn with_poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// The claims it makes.
    pub fn claims(&self) -> &RoutineClaims {
        &self.claims
    }

    /// Runs one claimed job to its end and records the outcome; renews its lease meanwhile.
    /// Returns whether it completed.
    ///
    /// # Errors
    /// The database's error when renewing or recording.
    pub async fn execute(&self, job: RoutineJob) -> Result<bool, RoutineError> {
        let row = job.run_row;
        let run = self.runner.run(job);
        tokio::pin!(run);
        let beat = self.claims.heartbeat_every();
        let outcome = loop {
            tokio::select! {
                outcome = &mut run => break outcome,
                () = tokio::time::sleep(beat) => self.claims.heartbeat(row).await?,
            }
        };
        self.claims.finish(row, outcome).await
    }

    /// One tick: recover, claim, run every claimed job to its end (concurrently).
    ///
    /// # Errors
    /// The database's error.
    pub async fn tick(&self) -> Result<TickReport, RoutineError> {
        let mut report = TickReport {
            interrupted: self.claims.recover().await?,
            ..TickReport::default()
        };
        let jobs = self.claims.claim(&mut report.missed).await?;
        report.claimed = jobs.len();
        for done in join_all(jobs.into_iter().map(|j| self.execute(j))).await {
            if done? {
                report.completed += 1;
            } else {
                report.failed += 1;
            }
        }
        Ok(report)
    }

    /// Ticks until `cancel` fires: claims, starts each claimed job on the scheduler's task
    /// tracker without waiting for it, and sleeps until the next due time or the poll
    /// interval, whichever is sooner. Errors are logged and retried at the next tick. Jobs
    /// still running when it returns go on until they end.
    pub async fn run(&self, cancel: CancellationToken) {
        while !cancel.is_cancelled() {
            let mut missed = 0;
            let claimed = async {
                self.claims.recover().await?;
                self.claims.claim(&mut missed).await
            }
            .await;
            match claimed {
                Ok(jobs) => {
                    for job in jobs {
                        let me = self.clone();
                        self.jobs.spawn(async move {
                            if let Err(e) = me.execute(job).await {
                                tracing::warn!(error = %e, "could not record a routine run");
                            }
                        });
                    }
                }
                Err(e) => tracing::warn!(error = %e, "routine scheduler tick failed"),
            }
            let wait = match self.claims.next_due().await {
                Ok(Some(due)) => {
                    let ms = u64::try_from(due - self.claims.now_ms()).unwrap_or(0);
                    Duration::from_millis(ms).min(self.poll)
                }
                _ => self.poll,
            };
            tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// How a run of a routine's agent gets its tool context (workspace, memory scoped to the
/// agent, the routines it may change).
pub type RunExtensions = Arc<dyn Fn(&str) -> Extensions + Send + Sync>;

/// Runs a routine's agent, built by the [`AgentFactory`], as a run of the [`RunRegistry`].
#[derive(Clone)]
pub struct AgentRoutineRunner {
    agents: AgentFactory,
    runs: RunRegistry,
    extensions: RunExtensions,
}

impl std::fmt::Debug for AgentRoutineRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRoutineRunner").finish_non_exhaustive()
    }
}

impl AgentRoutineRunner {
    /// A runner building agents with `agents`, running them in `runs`, with the tool
    /// context `extensions` gives for the agent's name.
    pub fn new(agents: AgentFactory, runs: RunRegistry, extensions: RunExtensions) -> Self {
        Self {
            agents,
            runs,
            extensions,
        }
    }

    async fn run_job(&self, job: RoutineJob) -> Result<JobOutcome, String> {
        let built = self
            .agents
            .build_named(&job.agent)
            .await
            .map_err(|e| format!("routine `{}`: {e}", job.routine))?;
        let start = RunStart::new(job.prompt.clone()).with_model(built.model);
        let entry = self
            .runs
            .start(built.agent, start, (self.extensions)(&job.agent))
            .await
            .map_err(|e| format!("routine `{}`: {e}", job.routine))?;
        // A routine's run may wait for a person; the scheduler heart-beats meanwhile.
        let mut progress = entry.watch();
        while !entry.status().is_terminal() {
            if progress.changed().await.is_err() {
                break;
            }
        }
        let view = entry.view();
        match view.status {
            RunStatus::Succeeded => {
                let mut outcome = JobOutcome::linked(view.id);
                outcome.detail = view
                    .answer
                    .as_deref()
                    .and_then(|a| a.lines().find(|l| !l.trim().is_empty()))
                    .map(|l| l.chars().take(200).collect());
                Ok(outcome)
            }
            status => Err(format!(
                "run {} ended {}{}",
                view.id,
                status.as_str(),
                view.error.map(|e| format!(": {e}")).unwrap_or_default()
            )),
        }
    }
}

impl RoutineRunner for AgentRoutineRunner {
    fn run(&self, job: RoutineJob) -> BoxFuture<'_, Result<JobOutcome, String>> {
        Box::pin(self.run_job(job))
    }
}
