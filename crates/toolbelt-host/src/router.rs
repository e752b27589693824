//! The router a stored agent's settings ask for.

use std::sync::Arc;

use toolbelt_llm::ModelProfile;
use toolbelt_router::{
    AnyRouter, Completer, HybridConfig, HybridRouter, KeywordRouter, LlmReranker, LowConfidence,
    RerankRouter,
};
use toolbelt_store::RouterSettings;

use crate::error::HostError;

/// The router the settings of agent `agent` ask for, built from `base` (the process's standard hybrid router,
/// which carries its encoder); `None` for strategy `none` (every tool is sent).
///
/// No strategy means `hybrid`. `max_tools` caps how many tools one request gets (keyword,
/// lexical, hybrid); `always` tools are sent whatever the ranking (hybrid, and `embedding`,
/// which is the hybrid router: the embedding signal joins it where the host has an encoder).
/// With `llm_rerank` set, `model` (the agent's own) reranks the top of the hybrid ranking
/// ([`RerankRouter`]).
///
/// # Errors
/// [`HostError::InvalidAgent`] at `router.strategy` for an unknown strategy, at
/// `router.max_tools` for 0, or at `router.llm_rerank` for a strategy without a ranking or no
/// model (stored rows are checked on write; this guards rows written by other means).
pub fn router_for(
    agent: &str,
    settings: &RouterSettings,
    base: &HybridRouter,
    model: Option<Arc<dyn Completer>>,
) -> Result<Option<AnyRouter>, HostError> {
    if settings.max_tools == Some(0) {
        return Err(HostError::invalid(
            agent,
            "router.max_tools",
            "must be at least 1",
        ));
    }
    let strategy = settings.strategy.as_deref().unwrap_or("hybrid");
    if settings.llm_rerank.is_some() && !matches!(strategy, "hybrid" | "embedding") {
        return Err(HostError::invalid(
            agent,
            "router.llm_rerank",
            format!("reranks the hybrid ranking; strategy `{strategy}` has none"),
        ));
    }
    let router = match strategy {
        "none" => return Ok(None),
        "keyword" => AnyRouter::new(KeywordRouter::builtin()),
        "lexical" => {
            // The base's BM25 router, so its indexes and learned usage are shared.
            let mut lexical = base.lexical().clone();
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
            let hybrid = base.clone().with_config(config);
            match settings.llm_rerank {
                None => AnyRouter::new(hybrid),
                Some(n) => {
                    let model = model.ok_or_else(|| {
                        HostError::invalid(agent, "router.llm_rerank", "no model to rerank with")
                    })?;
                    let reranker = LlmReranker::shared(model).with_top_n(n);
                    AnyRouter::new(RerankRouter::new(hybrid, reranker))
                }
            }
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

/// Tokens the LLM tier's answer may take: a list of names is short, and a model that keeps
/// writing is cut off instead of holding the request.
pub const RERANK_MAX_TOKENS: u32 = 96;

/// The tools every workspace question gets for a small model (see [`for_profile`]).
pub const WORKSPACE_TOOLS: [&str; 3] = ["file_search", "file_read", "list_dir"];

/// `config` adjusted to what the model of `profile` handles: at most `max_tools` tools a
/// request; for a model that should get no tools when the router is unsure (small local
/// models, `tools_when_unsure: false`), none then, two shared words before a word match counts
/// as sure, the encoder never making the router sure (it always has a nearest tool), and the
/// file tools for every request that names the workspace (ADR 0059). Otherwise, when the
/// toolset is larger than `max_tools`, an unsure router sends the best `max_tools`. `toolbelt
/// run` and every stored agent (through [`AgentFactory`](crate::AgentFactory)) use it.
pub fn for_profile(config: HybridConfig, profile: &ModelProfile, toolset: usize) -> HybridConfig {
    let max_tools = profile.max_tools;
    let (min_k, max_k) = (config.min_k, config.max_k);
    let config = config.with_k_range(min_k.min(max_tools), max_k.min(max_tools));
    if !profile.tools_when_unsure {
        config
            .with_low_confidence(LowConfidence::NoTools)
            .with_min_lexical_words(2)
            .with_embedding_confidence(false)
            .with_workspace_tools(WORKSPACE_TOOLS)
            .with_named_file_tool("file_read")
    } else if toolset > max_tools {
        config.with_low_confidence(LowConfidence::TopK(max_tools))
    } else {
        config
    }
}
