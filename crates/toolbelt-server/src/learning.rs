//! Learning from use (opt-in, [`ServerConfig::learn_from_runs`](crate::ServerConfig)): the
//! router indexes each tool with the requests of runs whose calls of it succeeded, read from
//! the server's own run log at start-up and again every `learn_refresh_secs`.

use std::time::Duration;

use toolbelt_host::LearnSettings;

use crate::state::AppState;

/// Starts learning in `state`'s host when the configuration asks for it and the server has a
/// database: reads the run log once before returning (so the first request already routes
/// with it), then re-reads it every `learn_refresh_secs` in a task of the host, which ends at
/// shutdown. Returns whether learning started. A failed read is logged; routing goes on with
/// what was learned before.
pub async fn start(state: &AppState) -> bool {
    let config = state.config();
    if !config.learn_from_runs {
        return false;
    }
    let settings = LearnSettings::default()
        .with_half_life_days(config.learn_half_life_days)
        .with_refresh(Duration::from_secs(config.learn_refresh_secs));
    state.host().start_learning(settings).await
}
