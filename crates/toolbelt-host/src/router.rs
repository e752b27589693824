//! The router a stored agent's settings ask for.

use toolbelt_router::{AnyRouter, HybridRouter, KeywordRouter, LexicalConfig, LexicalRouter};
use toolbelt_store::RouterSettings;

use crate::error::HostError;

/// The router the settings of agent `agent` ask for, built from `base` (the process's standard hybrid router,
/// which carries its encoder); `None` for strategy `none` (every tool is sent).
///
/// No strategy means `hybrid`. `max_tools` caps how many tools one request gets (keyword,
/// lexical, hybrid); `always` tools are sent whatever the ranking (hybrid, and `embedding`,
/// which is the hybrid router: the embedding signal joins it where the host has an encoder).
///
/// # Errors
/// [`HostError::InvalidAgent`] at `router.strategy` for an unknown strategy, or at
/// `router.max_tools` for 0 (stored rows are checked on write; this guards rows written by
/// other means).
pub fn router_for(
    agent: &str,
    settings: &RouterSettings,
    base: &HybridRouter,
) -> Result<Option<AnyRouter>, HostError> {
    if settings.max_tools == Some(0) {
        return Err(HostError::invalid(
            agent,
            "router.max_tools",
            "must be at least 1",
        ));
    }
    let strategy = settings.strategy.as_deref().unwrap_or("hybrid");
    let router = match strategy {
        "none" => return Ok(None),
        "keyword" => AnyRouter::new(KeywordRouter::builtin()),
        "lexical" => {
            let mut lexical = LexicalRouter::new(LexicalConfig::default());
            if let Some(n) = settings.max_tools {
                lexical = lexical.with_top_k(n);
            }
            AnyRouter::new(lexical)
        }
        "hybrid" | "embedding" => {
            let defaults = base.config().clone();
            let mut config = defaults.clone().with_pinned(settings.always.clone());
            if let Some(n) = settings.max_tools {
                config = config.with_k_range(defaults.min_k.min(n), defaults.max_k.min(n));
            }
            AnyRouter::new(base.clone().with_config(config))
        }
        other => {
            return Err(HostError::invalid(
                agent,
                "router.strategy",
                format!("`{other}` is not one of none, keyword, lexical, embedding, hybrid"),
            ));
        }
    };
    Ok(Some(router))
}
