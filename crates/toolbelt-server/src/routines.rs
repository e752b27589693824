//! Routines inside the server: [`spawn_scheduler`] runs the host's routine
//! [`Scheduler`] over the server's store until the server shuts down, with an
//! [`AgentRoutineRunner`] over the server's agents, runs and tool context.

use std::sync::Arc;

use tokio::task::JoinHandle;
use toolbelt_host::routines::{AgentRoutineRunner, Scheduler};
use toolbelt_store::{ClaimConfig, RoutineClaims};

use crate::state::AppState;

/// Starts the routine scheduler on `state`'s store, as instance `instance`, until the
/// server's shutdown token fires. `None` when the state has no store.
pub fn spawn_scheduler(state: &AppState, instance: impl Into<String>) -> Option<JoinHandle<()>> {
    let store = state.store()?.clone();
    let context = state.clone();
    let runner = AgentRoutineRunner::new(
        state.agents().clone(),
        state.runs().clone(),
        Arc::new(move |agent: &str| context.run_extensions(agent)),
    );
    let claims =
        RoutineClaims::new(store).with_config(ClaimConfig::default().with_instance(instance));
    let scheduler = Scheduler::new(claims, Arc::new(runner));
    let cancel = state.shutdown().clone();
    Some(tokio::spawn(async move { scheduler.run(cancel).await }))
}
