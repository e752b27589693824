//! Routines inside the server: [`start`] starts the host's routine loop with the server's
//! tool context for each run.

use std::sync::Arc;

use crate::state::AppState;

/// Starts the routine loop of `state`'s host as instance `instance`, each due routine an
/// ordinary run whose tool context is [`AppState::run_extensions`]; it ends when the server
/// shuts down. Returns `false`, starting nothing, when the state has no store.
pub fn start(state: &AppState, instance: impl Into<String>) -> bool {
    let context = state.clone();
    state.host().start_routines(
        instance,
        Arc::new(move |agent: &str| context.run_extensions(agent)),
    )
}
