//! Routines inside the server: [`ServerRoutineRunner`] runs a due routine's agent through
//! the [`RunRegistry`](toolbelt_host::runs::RunRegistry), and [`spawn_scheduler`] keeps the store's
//! [`Scheduler`] ticking until the server shuts down.
//!
//! A routine's run is an ordinary run: it shows in `GET /runs`, goes to the run log, may
//! wait for an approval like any other, and its id is linked from the routine's history.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::task::JoinHandle;
use toolbelt_host::runs::{RunStart, RunStatus};
use toolbelt_store::{JobOutcome, RoutineJob, RoutineRunner, Scheduler, SchedulerConfig};

use crate::state::AppState;

/// Runs routines with the server's agents, tools and run registry.
#[derive(Clone)]
pub struct ServerRoutineRunner {
    state: AppState,
}

impl std::fmt::Debug for ServerRoutineRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerRoutineRunner")
            .finish_non_exhaustive()
    }
}

impl ServerRoutineRunner {
    /// A runner over `state`'s agents and runs.
    pub fn new(state: AppState) -> Self {
        Self { state }
    }

    async fn run_job(&self, job: RoutineJob) -> Result<JobOutcome, String> {
        let state = &self.state;
        let built = state
            .agents()
            .build_named(&job.agent)
            .await
            .map_err(|e| format!("routine `{}`: {e}", job.routine))?;
        let start = RunStart::new(job.prompt.clone()).with_model(built.model);
        let entry = state
            .runs()
            .start(built.agent, start, state.run_extensions(&job.agent))
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

impl RoutineRunner for ServerRoutineRunner {
    fn run(&self, job: RoutineJob) -> BoxFuture<'_, Result<JobOutcome, String>> {
        Box::pin(self.run_job(job))
    }
}

/// Starts the routine scheduler on `state`'s store, as instance `instance`, until the
/// server's shutdown token fires. `None` when the state has no store.
pub fn spawn_scheduler(state: &AppState, instance: impl Into<String>) -> Option<JoinHandle<()>> {
    let store = state.store().cloned()?;
    let scheduler = Scheduler::new(store, Arc::new(ServerRoutineRunner::new(state.clone())))
        .with_config(SchedulerConfig::default().with_instance(instance));
    let cancel = state.shutdown().clone();
    Some(tokio::spawn(async move { scheduler.run(cancel).await }))
}
