//! Learning from use (opt-in, [`ServerConfig::learn_from_runs`](crate::ServerConfig)): the
//! router indexes each tool with the requests of runs whose calls of it succeeded, read from
//! the server's own run log at start-up and again every `learn_refresh_secs`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::task::JoinHandle;
use toolbelt_host::{AgentFactory, StoreRunLog};
use toolbelt_router::{LearnConfig, LearnedUsage, RunLog};

use crate::state::AppState;

/// Starts learning when the configuration asks for it and the server has a database: reads
/// the run log once before returning (so the first request already routes with it), then
/// re-reads it every `learn_refresh_secs` in the returned task, which ends at shutdown.
/// `None` when learning is off. A failed read is logged; routing goes on with what was
/// learned before.
pub async fn start(state: &AppState) -> Option<JoinHandle<()>> {
    let config = state.config();
    if !config.learn_from_runs {
        return None;
    }
    let Some(store) = state.store().cloned() else {
        tracing::warn!("learn_from_runs needs a database: the router does not learn");
        return None;
    };
    let log = StoreRunLog::new(store);
    let cfg = LearnConfig::default()
        .with_half_life(config.learn_half_life_days.saturating_mul(24 * 3600));
    let every = Duration::from_secs(config.learn_refresh_secs.max(1));
    let mut learned = refresh(state.agents(), &log, &cfg, None).await;
    let days = config.learn_half_life_days;
    match &learned {
        Some(usage) => tracing::info!(
            examples = usage.len(),
            tools = usage.tools(),
            half_life_days = days,
            refresh_secs = every.as_secs(),
            "router: learning from the run log is on"
        ),
        None => tracing::warn!(
            half_life_days = days,
            refresh_secs = every.as_secs(),
            "router: learning from the run log is on, but the first read failed"
        ),
    }
    let agents = state.agents().clone();
    let shutdown = state.shutdown().clone();
    Some(tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = tick.tick() => {
                    if let Some(usage) = refresh(&agents, &log, &cfg, learned.as_ref()).await {
                        learned = Some(usage);
                    }
                }
            }
        }
    }))
}

/// Reads the log and gives the router what it teaches when that changed; the usage read, or
/// `None` when the log could not be read.
async fn refresh(
    agents: &AgentFactory,
    log: &impl RunLog,
    cfg: &LearnConfig,
    before: Option<&LearnedUsage>,
) -> Option<LearnedUsage> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let usage = match LearnedUsage::from_run_log(log, now, cfg).await {
        Ok(usage) => usage,
        Err(error) => {
            tracing::warn!(%error, "router: the run log could not be read; learned usage kept");
            return None;
        }
    };
    // An unchanged usage keeps the index as it is (a new one re-indexes every tool).
    if before != Some(&usage) {
        tracing::debug!(
            examples = usage.len(),
            tools = usage.tools(),
            "router: learned usage refreshed"
        );
        agents.set_learned_usage(Some(usage.clone()));
    }
    Some(usage)
}
